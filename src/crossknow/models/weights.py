"""The identity of a model's weights, recorded in every run directory that scores with it: each weight file's SHA-256.

Hashing a gigabyte takes seconds, so a file of a Hugging Face cache snapshot (a link to a blob named by the Hub's
SHA-256 of its content) is identified by that name, and other hashes are kept in crossknow's cache
(`weight-hashes/`, one JSON file per model directory, which is never written) with each file's size, inode and
times, and reused while those are unchanged (a same-size rewrite within one clock tick would go unnoticed); an
unwritable cache only means hashing again.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from crossknow.store.atomic import atomic_write_text
from crossknow.store.cache_dir import cache_dir
from crossknow.store.hashing import file_sha256

HASH_DIR = "weight-hashes"
"""Where, under crossknow's cache directory, weight hashes are kept."""


def _kept_path(directory: Path) -> Path:
    name = hashlib.sha256(str(directory.resolve()).encode("utf-8")).hexdigest()[:32]
    return cache_dir() / HASH_DIR / f"{name}.json"


def weight_files(directory: Path) -> list[Path]:
    """The weight files of a transformers model directory (safetensors, else PyTorch .bin)."""
    return sorted(directory.glob("*.safetensors")) or sorted(directory.glob("pytorch_model*.bin"))


def _hub_blob_sha256(path: Path) -> str | None:
    """The SHA-256 that names the Hugging Face cache blob `path` links to, if it does."""
    if not path.is_symlink():
        return None
    target = path.resolve()
    name = target.name
    if target.parent.name == "blobs" and len(name) == 64 and all(char in "0123456789abcdef" for char in name):
        return name
    return None


def directory_weights_hash(directory: str | Path) -> str:
    """'NAME:SHA256,...' over the directory's weight files: a Hub blob's name, or the kept hashes where they still
    hold."""
    directory = Path(directory)
    kept_path = _kept_path(directory)
    try:
        kept = json.loads(kept_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        kept = {}
    entries, changed = {}, False
    for path in weight_files(directory):
        blob = _hub_blob_sha256(path)
        if blob is not None:
            entries[path.name] = {"sha256": blob}
            continue
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
            atomic_write_text(kept_path, json.dumps(entries, indent=1))
        except OSError:
            pass  # an unwritable cache only costs hashing again next time
    return ",".join(f"{name}:{entry['sha256']}" for name, entry in entries.items())
