"""A run directory: the resolved config, the inputs' hashes, and resumable stage outputs.

Stage outputs are append-only Parquet shards listed in a manifest. A shard is written atomically
before the manifest names it, and the manifest is the only source of truth, so a run killed at any
point (kill -9 included) resumes without losing or duplicating anything: a shard the manifest does
not name is an orphan of a crash and is overwritten.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from crossknow.errors import CrossknowError
from crossknow.store.atomic import atomic_write, atomic_write_json, atomic_write_text

CONFIG_FILE = "config.yaml"
INPUTS_FILE = "inputs.json"


class ShardedTable:
    """Append-only Parquet shards of one stage, with a manifest of the keys each shard holds."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.manifest_path = directory / "manifest.json"

    def _manifest(self) -> list[dict[str, Any]]:
        if not self.manifest_path.exists():
            return []
        return json.loads(self.manifest_path.read_text(encoding="utf-8"))["shards"]

    def done_keys(self) -> set[str]:
        """Keys (e.g. item ids) of every committed shard."""
        return {key for shard in self._manifest() for key in shard["keys"]}

    def append(self, table: pa.Table, keys: Iterable[str]) -> None:
        """Commit `table` as a new shard holding `keys`: the shard first, then the manifest."""
        shards = self._manifest()
        name = f"shard-{len(shards):06d}.parquet"
        atomic_write(self.directory / name, lambda handle: pq.write_table(table, handle), binary=True)
        shards.append({"file": name, "keys": list(keys), "rows": table.num_rows})
        atomic_write_json(self.manifest_path, {"shards": shards})

    def read(self, schema: pa.Schema) -> pa.Table:
        """All committed shards in commit order, as one table (empty with `schema` when none)."""
        tables = [pq.read_table(self.directory / shard["file"]) for shard in self._manifest()]
        return pa.concat_tables(tables) if tables else schema.empty_table()


class RunDir:
    """The directory one command writes; opening it again with the same config resumes it."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def open(
        self, config: dict[str, Any], inputs: dict[str, str], volatile: Iterable[str] = (), has_results: bool = False
    ) -> None:
        """Record `config` and the inputs' hashes, or check them against a run already here.

        Keys in `volatile` (settings that cannot change the numbers, such as the batch size) may
        differ on resume. Anything else that differs is an error: the directory holds another run.
        A directory whose stages hold no committed shard (a run that failed before its first result,
        e.g. on a mistyped model spec) holds no results yet: its config is simply replaced. A command
        whose results are not stage shards (training checkpoints) says so with `has_results`.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        config_path, inputs_path = self.path / CONFIG_FILE, self.path / INPUTS_FILE
        has_results = has_results or any(ShardedTable(stage).done_keys() for stage in (self.path / "stages").glob("*/"))
        if config_path.exists() and has_results:
            previous = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
            ignored = set(volatile)
            changed = sorted(
                key for key in set(previous) | set(config)
                if key not in ignored and previous.get(key) != config.get(key)
            )
            if changed:
                details = "; ".join(f"{key}: {previous.get(key)!r} -> {config.get(key)!r}" for key in changed)
                raise CrossknowError(f"{self.path} holds a run with another config ({details}); use another --out")
            if inputs_path.exists() and json.loads(inputs_path.read_text(encoding="utf-8")) != inputs:
                raise CrossknowError(f"{self.path}: an input file changed since this run began; use another --out")
            return
        atomic_write_text(config_path, yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
        atomic_write_json(inputs_path, inputs)

    def stage(self, name: str) -> ShardedTable:
        """The shards of stage `name`."""
        return ShardedTable(self.path / "stages" / name)
