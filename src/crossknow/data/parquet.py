"""Items as Parquet tables: options as list<string>, metadata JSON-encoded in a string column.

A file holds one kind of item (MCItem or QAItem), named in the table's schema metadata, so that
reading it back gives exactly the items written.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from crossknow.data.guarded import parse_json
from crossknow.data.jsonl import Item, build_item, note_unique_id
from crossknow.data.schemas import ItemSet, MCItem, QAItem
from crossknow.errors import InputError
from crossknow.store.atomic import atomic_write

FORMAT = "parquet"
_TYPE_KEY = b"crossknow.item_type"

_MC_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("lang", pa.string()),
        ("kind", pa.string()),
        ("prompt", pa.string()),
        ("options", pa.list_(pa.string())),
        ("answer", pa.int64()),
        ("source_lang", pa.string()),
        ("pair_id", pa.string()),
        ("metadata", pa.string()),
    ],
    metadata={_TYPE_KEY: b"MCItem"},
)
_QA_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("lang", pa.string()),
        ("question", pa.string()),
        ("answer", pa.string()),
        ("context", pa.string()),
        ("source_lang", pa.string()),
        ("pair_id", pa.string()),
        ("metadata", pa.string()),
    ],
    metadata={_TYPE_KEY: b"QAItem"},
)
_SCHEMAS: dict[str, tuple[type[MCItem | QAItem], pa.Schema]] = {
    "MCItem": (MCItem, _MC_SCHEMA),
    "QAItem": (QAItem, _QA_SCHEMA),
}


def items_table(items: Sequence[Item]) -> pa.Table:
    """The items as an Arrow table; all of them must be of one type (all MCItem or all QAItem)."""
    types = {type(item).__name__ for item in items}
    if len(types) > 1:
        raise ValueError(f"a Parquet item file holds one item type, got {sorted(types)}")
    _, schema = _SCHEMAS[types.pop() if types else "MCItem"]
    rows = [item.model_dump() for item in items]
    for row in rows:
        row["metadata"] = json.dumps(row["metadata"], ensure_ascii=False, sort_keys=True)
    return pa.Table.from_pylist(rows, schema=schema)


def write_parquet(path: str | Path, items: Sequence[Item]) -> Path:
    """Write items (all MCItem or all QAItem) to a Parquet file, atomically; returns the path."""
    table = items_table(items)
    return atomic_write(path, lambda handle: pq.write_table(table, handle), binary=True)


def read_parquet(path: str | Path, limit: int | None = None) -> ItemSet:
    """Read a Parquet file written by `write_parquet`; `limit` keeps the first N items.

    Raises InputError for a file that is not Parquet or not an item table, or a row that fails
    validation or repeats an id (its 1-based row number is reported as the line).
    """
    try:
        table = pq.read_table(path)
        table.validate(full=True)  # a string column's bytes UTF-8, offsets in bounds: else to_pylist fails
    except (OSError, pa.ArrowException) as exc:
        raise InputError(path, f"cannot read as Parquet: {exc}") from exc
    recorded = (table.schema.metadata or {}).get(_TYPE_KEY, b"")
    type_name = next((name for name in _SCHEMAS if name.encode() == recorded), None)
    if type_name is None:
        found = f" (found {recorded[:40]!r})" if recorded else ""
        raise InputError(path, f"not a crossknow item table: no item type in its schema metadata{found}")
    model, schema = _SCHEMAS[type_name]
    if table.schema.names != schema.names:
        raise InputError(path, f"expected columns {schema.names}, found {table.schema.names}")
    if limit is not None:
        table = table.slice(0, limit)
    items: list[Item] = []
    first_row: dict[str, int] = {}
    for row_no, row in enumerate(table.to_pylist(), start=1):
        if not isinstance(row["metadata"], str):
            raise InputError(path, "expected JSON text", line=row_no, field="metadata")
        row["metadata"] = parse_json(row["metadata"], path, row_no, "metadata")
        row = {key: value for key, value in row.items() if value is not None}
        item = build_item(row, path, row_no, model)
        note_unique_id(first_row, item.id, path, row_no)
        items.append(item)
    return ItemSet(name=Path(path).stem, format=FORMAT, items=items)
