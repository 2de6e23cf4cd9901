"""A run directory: the resolved config, the inputs' hashes, the environments it ran in, and resumable stage
outputs.

Stage outputs are append-only Parquet shards, each written atomically before the manifest (`store.manifest`), the only
source of truth, names it: a run killed at any point (kill -9 included) resumes without losing or duplicating
anything. One process at a time writes a directory: `RunDir.open` locks it (`store.run_lock`) until `close()`, the
end of a `with` block or of the process, and removes the temporary files that a killed writer left behind.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from crossknow.errors import CrossknowError
from crossknow.store.atomic import atomic_write, atomic_write_json, atomic_write_text, remove_stale_temporaries
from crossknow.store.config_keys import flatten
from crossknow.store.environment import record_environment
from crossknow.store.manifest import Manifest
from crossknow.store.run_lock import RunLock

CONFIG_FILE = "config.yaml"
INPUTS_FILE = "inputs.json"
MANIFEST_FILE = "manifest.json"


class ShardedTable:
    """Append-only Parquet shards of one stage, with a manifest of the keys each shard holds."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.manifest_path = directory / MANIFEST_FILE
        self._manifest = Manifest(self.manifest_path)

    def done_keys(self) -> set[str]:
        """Keys (e.g. item ids) of every committed shard (from memory unless the manifest changed)."""
        return self._manifest.keys()

    def __len__(self) -> int:
        """How many shards are committed."""
        return len(self._manifest)

    def append(self, table: pa.Table, keys: Iterable[str]) -> None:
        """Commit `table` as a new shard holding `keys`: the shard first, then its manifest line."""
        name = f"shard-{len(self._manifest):06d}.parquet"
        atomic_write(self.directory / name, lambda handle: pq.write_table(table, handle), binary=True)
        self._manifest.append({"file": name, "keys": list(keys), "rows": table.num_rows})

    def read(self, schema: pa.Schema) -> pa.Table:
        """All committed shards in commit order, as one table (empty with `schema` when none)."""
        tables = [pq.read_table(self.directory / shard["file"]) for shard in self._manifest.shards()]
        return pa.concat_tables(tables) if tables else schema.empty_table()


class Prepares(Protocol):
    """A run-directory layout (`store.layout.Layout`), as `RunDir.open` uses it."""

    def prepare(self, run: Path) -> None:
        """Migrate or refuse the directory `run`, and record the layout there."""


def absolute_path(value: Any) -> Any:
    """A path-valued config entry (a path, a list of paths, or None) with every path made absolute; a dataset on the
    Hugging Face Hub (`hf:ORG/NAME...`, crossknow.data.hub_data) is no path and stays as it is."""
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return [absolute_path(item) for item in value]
    if isinstance(value, str) and value.startswith("hf:"):
        return value
    return os.path.abspath(os.path.expanduser(value))


@contextmanager
def kept_or_temporary(out: str | Path | None) -> Iterator[Path]:
    """The run directory of a call from Python: `out` (created, kept, resumable) where the caller names one, else a
    temporary directory removed when the block ends."""
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
        yield Path(out)
        return
    with tempfile.TemporaryDirectory() as temporary:
        yield Path(temporary)


def _volatile(key: str, volatile: set[str]) -> bool:
    """Whether the dotted config key `key` is volatile: itself or a record it lies in."""
    return any(key == name or key.startswith(name + ".") for name in volatile)


def _grown(previous: Any, current: Any) -> bool:
    """Whether bound `current` admits at least what `previous` did (None: no bound)."""
    if current is None:
        return True
    return previous is not None and current >= previous


class RunDir:
    """The directory one command writes; opening it again with the same config resumes it.

    Use it as a context manager (or call `close()`) to release its lock; else the lock lasts until
    the process ends.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock: RunLock | None = None

    def __enter__(self) -> RunDir:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Release this run directory's lock (no-op when not opened, or already closed)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def open(
        self,
        config: dict[str, Any],
        inputs: dict[str, str],
        volatile: Iterable[str] = (),
        has_results: bool = False,
        *,
        paths: Iterable[str] = (),
        growable: Iterable[str] = (),
        upgrade: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        layout: Prepares | None = None,
    ) -> None:
        """Lock the directory, then record `config` and the inputs' hashes, or check them against a run
        already here, and this process's environment (`store.environment`).

        Another process holding the directory fails at once (`RunDirInUse`, naming its pid); the
        temporary files of a killed writer are removed. Keys in `volatile` (settings that cannot change
        the numbers, such as the batch size) may differ on resume. Keys in `paths` hold a path, a list
        of paths or None: they are recorded as absolute paths (`~` expanded, symlinks kept) and compared
        so, which makes `data.jsonl` and `/home/me/data.jsonl` one run; the keys of `inputs` (file
        paths) are treated the same way. Keys in `growable` are bounds (such as `--limit`; None means no
        bound) that may be raised on resume, to a larger value or to None, and are then recorded with
        their new value; lowering one is an error, since the run may already hold results past the new
        bound. Anything else that differs is an error: the directory holds another run.
        A directory whose stages hold no committed shard (a run that failed before its first result,
        e.g. on a mistyped model spec) holds no results yet: its config is simply replaced. A command
        whose results are not stage shards (training checkpoints) says so with `has_results`.
        Nested records are compared field by field (`volatile` names their fields by dotted path), and the
        run's config.yaml is read through `upgrade` first (a config class's fold of older, flat keys). A command that
        declares its `layout` (`store.layout`) has an older directory migrated, or another command's refused, first.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        if self._lock is None:
            self._lock = RunLock.acquire(self.path)
        try:
            remove_stale_temporaries(self.path)
            if layout is not None:
                layout.prepare(self.path)
            self._record_or_check(config, inputs, set(volatile), has_results, set(paths), set(growable), upgrade)
            record_environment(self.path)
        except BaseException:
            self.close()
            raise
        self._lock.mark_owner()

    def _record_or_check(
        self, config: dict[str, Any], inputs: dict[str, str], volatile: set[str], has_results: bool,
        path_keys: set[str], growable_keys: set[str],
        upgrade: Callable[[dict[str, Any]], dict[str, Any]] | None,
    ) -> None:
        """The config and inputs part of `open`, under the lock."""
        config = {key: absolute_path(value) if key in path_keys else value for key, value in config.items()}
        inputs = {absolute_path(path): digest for path, digest in inputs.items()}
        config_path, inputs_path = self.path / CONFIG_FILE, self.path / INPUTS_FILE
        has_results = has_results or any(ShardedTable(stage).done_keys() for stage in (self.path / "stages").glob("*/"))
        if config_path.exists() and has_results:
            previous = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
            previous = upgrade(previous) if upgrade is not None else previous
            previous = {key: absolute_path(value) if key in path_keys else value for key, value in previous.items()}
            old, new = flatten(previous), flatten(config)
            changed = sorted(
                key for key in set(old) | set(new)
                if not _volatile(key, volatile) and old.get(key) != new.get(key)
                and not (key in growable_keys and _grown(old.get(key), new.get(key)))
            )
            if changed:
                details = "; ".join(f"{key}: {old.get(key)!r} -> {new.get(key)!r}" for key in changed)
                lowered = [key for key in changed if key in growable_keys]
                hint = f"; {', '.join(lowered)} can be raised on resume, not lowered" if lowered else ""
                raise CrossknowError(
                    f"{self.path} holds a run with another config ({details}{hint}); use another --out"
                )
            recorded = json.loads(inputs_path.read_text(encoding="utf-8")) if inputs_path.exists() else None
            if recorded is not None and {absolute_path(path): digest for path, digest in recorded.items()} != inputs:
                raise CrossknowError(f"{self.path}: an input file changed since this run began; use another --out")
            raised = {key: config.get(key) for key in growable_keys if previous.get(key) != config.get(key)}
            if raised:
                atomic_write_text(config_path, yaml.safe_dump(previous | raised, sort_keys=False, allow_unicode=True))
            return
        atomic_write_text(config_path, yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
        atomic_write_json(inputs_path, inputs)

    def stage(self, name: str) -> ShardedTable:
        """The shards of stage `name`."""
        return ShardedTable(self.path / "stages" / name)
