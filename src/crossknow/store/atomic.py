"""Atomic file writes: a temporary file in the same directory, fsynced, then renamed over the target."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def atomic_write(path: Path, write: Callable[[str], None]) -> None:
    """Call `write(temp_path)` and move the finished file to `path`; a crash leaves no partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(temp)
        with open(temp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically."""
    atomic_write(path, lambda temp: Path(temp).write_text(text, encoding="utf-8"))


def atomic_write_json(path: Path, value: Any) -> None:
    """Write `value` as indented JSON to `path` atomically."""
    atomic_write_text(path, json.dumps(value, indent=2, ensure_ascii=False) + "\n")
