"""The manifest of a stage's shards: plain JSON (`{"shards": [{"file": ..., "keys": [...], "rows": N}, ...]}`) laid
out one shard a line, so that committing a shard writes only its own line.

An append goes over the closing `]}`, then fsync: it costs its own keys, not the run's. A kill mid-write can tear the
file: the reader keeps every complete shard line (the torn one's shard file is an orphan the next append overwrites),
and the next append rewrites the file whole, as it does a file in any other layout (docs/scoring.md).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from crossknow.errors import CrossknowError
from crossknow.store.atomic import atomic_write

HEAD = b'{"shards": [\n'
SEPARATOR = b",\n"
TAIL = b"\n]}\n"


def _line(shard: dict[str, Any]) -> bytes:
    """One shard's line (no newline: JSON escapes every newline inside its strings)."""
    return json.dumps(shard, ensure_ascii=False).encode("utf-8")


def _is_shard(value: Any) -> bool:
    return (
        isinstance(value, dict) and isinstance(value.get("file"), str) and isinstance(value.get("keys"), list)
        and isinstance(value.get("rows"), int)
    )


def _render(shards: list[dict[str, Any]]) -> bytes:
    """The whole file in the one-line-per-shard layout."""
    return HEAD + SEPARATOR.join(_line(shard) for shard in shards) + TAIL


class Manifest:
    """The committed shards of one stage, cached in memory and refreshed when the file changes."""

    def __init__(self, path: Path):
        self.path = path
        self._stamp: tuple[int, int, int] | None = None
        self._shards: list[dict[str, Any]] = []
        self._keys: set[str] = set()
        self._end: int | None = None
        """Offset of the closing TAIL when the file is in our layout and whole; None: rewrite it at the next append."""

    def shards(self) -> list[dict[str, Any]]:
        """Every committed shard record ({"file", "keys", "rows"}), in commit order."""
        self._refresh()
        return list(self._shards)

    def __len__(self) -> int:
        """How many shards are committed."""
        self._refresh()
        return len(self._shards)

    def keys(self) -> set[str]:
        """The keys of every committed shard (a copy)."""
        self._refresh()
        return set(self._keys)

    def append(self, shard: dict[str, Any]) -> None:
        """Commit `shard` (its file already written): one line appended and synced."""
        self._refresh()
        line = _line(shard)
        if self._end is None:
            data = _render([*self._shards, shard])
            atomic_write(self.path, lambda handle: handle.write(data), binary=True)
            end = len(data) - len(TAIL)
        else:
            fd = os.open(self.path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
            try:
                os.pwrite(fd, SEPARATOR + line + TAIL, self._end)
                os.fsync(fd)
            finally:
                os.close(fd)
            end = self._end + len(SEPARATOR) + len(line)
        self._shards.append(shard)
        self._keys.update(shard["keys"])
        self._end = end
        self._stamp = self._stat()

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def _refresh(self) -> None:
        """Reread the file if it changed since this object last read or wrote it."""
        stamp = self._stat()
        if stamp == self._stamp:
            return
        data = self.path.read_bytes() if stamp is not None else b""
        self._shards, whole = self._parse(data) if data else ([], False)
        self._keys = {key for shard in self._shards for key in shard["keys"]}
        self._end = len(data) - len(TAIL) if whole and self._shards and data == _render(self._shards) else None
        self._stamp = stamp

    def _parse(self, data: bytes) -> tuple[list[dict[str, Any]], bool]:
        """The shards in `data`, and whether the file was whole (valid JSON)."""
        try:
            value = json.loads(data)
        except ValueError:
            return self._recover(data), False
        shards = value.get("shards") if isinstance(value, dict) else None
        if not isinstance(shards, list) or not all(_is_shard(shard) for shard in shards):
            raise CrossknowError(f"{self.path}: not a crossknow manifest (expected {{\"shards\": [...]}})")
        return shards, True

    def _recover(self, data: bytes) -> list[dict[str, Any]]:
        """The complete shard lines of a manifest torn by a kill or power loss during an append."""
        lines = data.split(b"\n")
        if lines[0] + b"\n" != HEAD:
            raise CrossknowError(f"{self.path}: the manifest is damaged (not valid JSON); move the run aside")
        shards = []
        for line in lines[1:]:
            try:
                shard = json.loads(line.removesuffix(b","))
            except ValueError:
                break
            if not _is_shard(shard):
                break
            shards.append(shard)
        return shards
