"""Atomic file writes: a temporary file in the same directory, synced, then renamed over the target.

A crash at any point leaves either the old file or the new one, never a partial file; once the call
returns, the directory entry is synced too, so the rename survives a power loss. A process killed
mid-write leaves its temporary file (`.NAME.XXXXXXXX.tmp`) behind: `remove_stale_temporaries` clears
them when the directory is opened again by its only writer.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

TEMPORARY = re.compile(r"\..+\.[0-9a-z_]{8}\.tmp")
"""The name of a temporary file of `atomic_write` (the same shape as `tempfile.mkstemp`'s names)."""
FILE_MODE = 0o666
"""The mode new files are created with, before the process's umask (or a directory's default ACL) applies."""


def fsync_directory(directory: str | Path) -> None:
    """Sync `directory`'s entries (a rename or a new file in it) to disk."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _create_temporary(target: Path) -> tuple[int, Path]:
    """A new, empty temporary file beside `target`, created by the kernel with FILE_MODE less the umask
    (what any other new file of this process gets; `mkstemp` would make it 0600)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        candidate = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"
        try:
            return os.open(candidate, flags, FILE_MODE), candidate
        except FileExistsError:
            continue


def atomic_write(path: str | Path, write: Callable[[IO], object], *, binary: bool = False) -> Path:
    """Create or replace `path` atomically: `write(handle)` fills a temporary file (text in UTF-8,
    or bytes with `binary`), which is flushed, synced and renamed over `path`, and the directory is
    synced. On any error the old file (if any) is untouched and the temporary file is removed.
    A new file's permissions follow the umask, as for any file the process creates."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_path = _create_temporary(target)
    try:
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_path, target)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    fsync_directory(target.parent)
    return target


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write `text` (UTF-8) to `path` atomically."""
    return atomic_write(path, lambda handle: handle.write(text))


def atomic_write_json(path: str | Path, value: Any) -> Path:
    """Write `value` as indented JSON to `path` atomically."""
    return atomic_write_text(path, json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def remove_stale_temporaries(directory: str | Path) -> list[Path]:
    """Delete the temporary files of `atomic_write` that a killed process left anywhere under
    `directory`; return them. Call it only while no other process writes there (hold the run lock)."""
    removed = []
    for candidate in Path(directory).rglob(".*.tmp"):
        if TEMPORARY.fullmatch(candidate.name) and candidate.is_file() and not candidate.is_symlink():
            candidate.unlink(missing_ok=True)
            removed.append(candidate)
    return removed
