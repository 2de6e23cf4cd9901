"""The identity of a model's weights, recorded in every run directory that scores with it.

A local model directory is identified by the SHA-256 of each weight file. Hashing a gigabyte takes
seconds, so the result is kept beside the weights (`.crossknow-weights.json`, keyed by each file's
name, size, inode and modification and change times) and reused while those are unchanged (a file
rewritten in place to the same size within one clock tick would go unnoticed); a directory that
cannot be written is simply hashed again next time.
"""

from __future__ import annotations

import json
from pathlib import Path

from crossknow.store.hashing import file_sha256

HASH_FILE = ".crossknow-weights.json"
"""Where a directory's weight hashes are kept."""


def weight_files(directory: Path) -> list[Path]:
    """The weight files of a transformers model directory (safetensors, else PyTorch .bin)."""
    return sorted(directory.glob("*.safetensors")) or sorted(directory.glob("pytorch_model*.bin"))


def directory_weights_hash(directory: str | Path) -> str:
    """'NAME:SHA256,...' over the directory's weight files, from the kept hashes where they still hold."""
    directory = Path(directory)
    kept_path = directory / HASH_FILE
    try:
        kept = json.loads(kept_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        kept = {}
    entries, changed = {}, False
    for path in weight_files(directory):
        stat = path.stat()
        stamp = f"{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ctime_ns}:{stat.st_ino}"
        previous = kept.get(path.name)
        if isinstance(previous, dict) and previous.get("stamp") == stamp:
            entries[path.name] = previous
        else:
            entries[path.name] = {"stamp": stamp, "sha256": file_sha256(path)}
            changed = True
    if changed:
        try:
            kept_path.write_text(json.dumps(entries, indent=1), encoding="utf-8")
        except OSError:
            pass
    return ",".join(f"{name}:{entry['sha256']}" for name, entry in entries.items())


def weights_hash(spec: str) -> str:
    """Identity of the weights a model spec loads: the weight files' hashes for a local directory
    (the `default` model's cached checkpoint included), else the spec itself (a hub revision, a server
    model: their weights are not on this machine)."""
    from crossknow.models.registry import resolve_local

    kind, _, rest = spec.partition(":")
    if kind == "openai":
        return spec
    local = resolve_local(spec)
    if local is not None and local.revision is None and Path(local.path).is_dir():
        return directory_weights_hash(local.path)
    return spec
