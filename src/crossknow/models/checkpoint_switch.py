"""Load another checkpoint's weights into a model already in memory, and tell which blocks stayed the same.

A sweep over one training run's checkpoints loads the same architecture again and again: copying the new weights
into the loaded model skips the load, and comparing them says which lower blocks did not change (the frozen blocks
of `--train-layers last:N`), whose outputs `crossknow.models.frozen_prefix` then reuses. Weights are compared in the
model's compute dtype, as they compute: two checkpoints that round to the same bfloat16 values compute the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from crossknow.models.decoder import Decoder
from crossknow.models.placement import offloaded
from crossknow.models.weights import weight_files


def local_weights_dir(spec: str) -> Path | None:
    """The directory holding a local spec's weights (default, hf:DIR, gguf:FILE's cached checkpoint), else None."""
    from crossknow.models.specs import resolve_local

    if spec.startswith("openai:"):
        return None
    local = resolve_local(spec)
    if local is None or local.revision is not None or not Path(local.path).is_dir():
        return None
    return Path(local.path)


TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model")
"""The files that hold a checkpoint's vocabulary and merges; weights switch in place only between equal ones."""


def tokenizer_identity(directory: Path) -> str:
    """The SHA-256 of each tokenizer file the directory holds (two checkpoints of one run share it)."""
    from crossknow.store.hashing import file_sha256

    return ",".join(f"{name}:{file_sha256(directory / name)}" for name in TOKENIZER_FILES
                    if (directory / name).is_file())


def _open_tensors(directory: Path) -> dict[str, Any] | None:
    """Every tensor name of the directory's safetensors files -> its open file; None without safetensors."""
    from safetensors import safe_open

    files = [path for path in weight_files(directory) if path.suffix == ".safetensors"]
    if not files:
        return None
    handles: dict[str, Any] = {}
    for path in files:
        handle = safe_open(str(path), framework="pt", device="cpu")
        for name in handle.keys():  # noqa: SIM118 - safe_open handles are not mappings
            handles[name] = handle
    return handles


def _matching_tensors(model: Any, directory: Path) -> dict[str, tuple[torch.Tensor, Any]] | None:
    """Parameter name -> (parameter, open file) when the directory holds every parameter with its shape
    (a tied output head may be absent); None when it does not fit the model, or the model is quantised (its
    parameters hold a quantised form of the weights, which may even have the checkpoint's shapes, as 8-bit's do), or
    a device map offloads some of its weights (accelerate holds them apart from the parameters)."""
    if getattr(model, "is_quantized", False) or offloaded(model):
        return None
    handles = _open_tensors(directory)
    if handles is None:
        return None
    tied = {name for name, _ in model.named_parameters(remove_duplicate=False)} - dict(model.named_parameters()).keys()
    matched = {}
    for name, parameter in model.named_parameters():
        handle = handles.get(name)
        if handle is None:
            if name in tied:
                continue
            return None
        if tuple(handle.get_slice(name).get_shape()) != tuple(parameter.shape):
            return None
        matched[name] = (parameter, handle)
    return matched


def unchanged_blocks(decoder: Decoder, directory: Path, load: bool = False) -> int | None:
    """How many leading decoder blocks of the directory's weights equal the model's (0 when the input
    embeddings differ); with `load`, the directory's weights are then copied into the model. None (and
    the model untouched) when the directory's weights do not fit the model."""
    matched = _matching_tensors(decoder.model, directory)
    if matched is None:
        return None
    blocks, embedding, n_blocks = decoder.blocks_name, decoder.embedding_name, len(decoder.blocks)
    same_block = [True] * n_blocks
    embedding_same = True
    with torch.no_grad():
        for name, (parameter, handle) in matched.items():
            value = handle.get_tensor(name).to(dtype=parameter.dtype)
            value = value.to(parameter.device)
            same = torch.equal(value, parameter)
            if name == embedding:
                embedding_same = same
            elif name.startswith(blocks + "."):
                index = int(name[len(blocks) + 1 :].split(".", 1)[0])
                same_block[index] = same_block[index] and same
            if load and not same:
                parameter.copy_(value)
            if not load and not (embedding_same and all(same_block)):
                break  # the count of leading unchanged blocks is settled (parameters come in block order)
    if not embedding_same:
        return 0
    return next((i for i, same in enumerate(same_block) if not same), n_blocks)
