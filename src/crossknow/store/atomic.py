"""Atomic file writes: a temporary file in the same directory, synced, then renamed over the target.

A crash at any point leaves either the old file or the new one, never a partial file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


def atomic_write(path: str | Path, write: Callable[[IO], object], *, binary: bool = False) -> Path:
    """Create or replace `path` atomically: `write(handle)` fills a temporary file (text in UTF-8,
    or bytes with `binary`), which is flushed, synced and renamed over `path`. On any error the
    old file (if any) is untouched and the temporary file is removed."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return target


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write `text` (UTF-8) to `path` atomically."""
    return atomic_write(path, lambda handle: handle.write(text))


def atomic_write_json(path: str | Path, value: Any) -> Path:
    """Write `value` as indented JSON to `path` atomically."""
    return atomic_write_text(path, json.dumps(value, indent=2, ensure_ascii=False) + "\n")
