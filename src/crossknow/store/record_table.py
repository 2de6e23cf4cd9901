"""Typed records in a stage's shards (`run_dir.ShardedTable`, the store every command resumes from).

A commit writes its rows as one Parquet shard, keyed, before the manifest names it: a run killed at any point keeps
every committed row and nothing else. A row is kept as its key and its record's JSON; a
table that keeps more columns says so (`SCHEMA`, `columns`, `row`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Generic, TypeVar

import pyarrow as pa
from pydantic import BaseModel

from crossknow.store.run_dir import ShardedTable

T = TypeVar("T")


class RecordTable(Generic[T]):
    """The committed rows of one stage, parsed once per state of its manifest."""

    SCHEMA: ClassVar[pa.Schema] = pa.schema([("key", pa.string()), ("record", pa.string())])

    def __init__(self, table: ShardedTable, record_type: type[BaseModel], key: Callable[[T], str]):
        self.table = table
        self.record_type = record_type
        self.key = key
        self._rows: tuple[int, list[T]] | None = None

    def keys(self) -> set[str]:
        """The keys of every committed row."""
        return self.table.done_keys()

    def commit(self, rows: Sequence[T]) -> None:
        """Write `rows` as one shard (nothing for an empty list)."""
        if rows:
            table = pa.Table.from_pydict(self.columns(rows), schema=self.SCHEMA)
            self.table.append(table, [self.key(row) for row in rows])

    def rows(self) -> list[T]:
        """Every committed row, in commit order."""
        version = len(self.table)
        if self._rows is None or self._rows[0] != version:
            self._rows = (version, [self.row(values) for values in self.table.read(self.SCHEMA).to_pylist()])
        return self._rows[1]

    def columns(self, rows: Sequence[T]) -> dict[str, list[Any]]:
        """The shard's columns for `rows` (a row here is its record)."""
        return {"key": [self.key(row) for row in rows],
                "record": [row.model_dump_json() for row in rows]}  # type: ignore[attr-defined]

    def row(self, values: dict[str, Any]) -> T:
        """One committed row from its shard's columns."""
        return self.record_type.model_validate_json(values["record"])  # type: ignore[return-value]
