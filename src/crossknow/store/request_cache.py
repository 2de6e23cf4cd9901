"""A SQLite cache of model calls, so that re-running a pipeline costs nothing it already paid for.

An entry is a key, the JSON identity it was hashed from (kept for inspection) and a JSON value; the cache knows
nothing of models (`crossknow.generation` hashes requests with `cache_key`). Safe across processes and threads: WAL,
a busy timeout, one short transaction per write, and `INSERT OR IGNORE`, so that the first value stored for a key is
the one every later run replays. Callers store only successful results, so a re-run retries a failed request.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from crossknow.errors import CrossknowError

CACHE_FORMAT = 1
"""Part of every key; bumped when keys or values change shape, so that old entries simply miss."""
BUSY_TIMEOUT_MS = 60_000
"""How long a write waits for another process's transaction before failing."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY,
    identity TEXT NOT NULL,
    value TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal values give equal text."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def cache_key(identity: Mapping[str, Any]) -> str:
    """Hex SHA-256 of the canonical JSON of `identity` (with the cache format folded in)."""
    text = canonical_json({"cache_format": CACHE_FORMAT, **identity})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class RequestCache:
    """JSON values keyed by request hash, in one SQLite file; `hits` and `misses` count lookups."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.hits = 0
        """Lookups answered from the cache since this object was made."""
        self.misses = 0
        """Lookups that found nothing."""
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._pid = -1
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._connect()
        except (OSError, sqlite3.Error) as error:
            raise CrossknowError(f"cannot open the request cache {self.path}: {error}") from error

    def _connect(self) -> sqlite3.Connection:
        """This process's connection (a forked child opens its own)."""
        if self._connection is None or self._pid != os.getpid():
            connection = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
            )
            connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute(_SCHEMA)
            self._connection, self._pid = connection, os.getpid()
        return self._connection

    def get(self, key: str) -> Any | None:
        """The value stored under `key`, or None."""
        return self.get_many([key])[0]

    def get_many(self, keys: Sequence[str]) -> list[Any | None]:
        """Stored values in key order, None where there is none."""
        found: dict[str, str] = {}
        with self._lock:
            connection = self._connect()
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                rows = connection.execute(f"SELECT key, value FROM entries WHERE key IN ({marks})", chunk)
                found.update(rows.fetchall())
        values = [json.loads(found[k]) if k in found else None for k in keys]
        hits = sum(k in found for k in keys)
        self.hits += hits
        self.misses += len(keys) - hits
        return values

    def put(self, identity: Mapping[str, Any], value: Any) -> str:
        """Store `value` under the key of `identity` (the first value stored for a key stays); returns the key."""
        key = cache_key(identity)
        self.put_many([(key, identity, value)])
        return key

    def put_many(self, entries: Iterable[tuple[str, Mapping[str, Any], Any]]) -> int:
        """Store (key, identity, value) entries in one transaction; returns how many were new."""
        now = time.time()
        rows = [(key, canonical_json(identity), json.dumps(value, ensure_ascii=False), now)
                for key, identity, value in entries]
        if not rows:
            return 0
        with self._lock:
            connection = self._connect()
            connection.execute("BEGIN IMMEDIATE")
            try:
                cursor = connection.executemany("INSERT OR IGNORE INTO entries VALUES (?, ?, ?, ?)", rows)
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
        return cursor.rowcount

    def __len__(self) -> int:
        with self._lock:
            return self._connect().execute("SELECT COUNT(*) FROM entries").fetchone()[0]

    def close(self) -> None:
        """Close this process's connection."""
        with self._lock:
            if self._connection is not None and self._pid == os.getpid():
                self._connection.close()
            self._connection = None

    def __enter__(self) -> RequestCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RequestCache({str(self.path)!r}, hits={self.hits}, misses={self.misses})"
