"""Reading the append-only JSON-lines files of a Pitfalls run directory of layout version 1 (candidates, batches,
categories), to bring them into the record tables of version 2.

A version-1 file's last line may be torn by a kill; it is cut off, as that version's own reader did. A record
that repeats an earlier one's key is left out, as that reader kept the first.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from crossknow.data.jsonl import iter_json_lines, validation_problem
from crossknow.errors import InputError
from crossknow.store.layout import Table

R = TypeVar("R", bound=BaseModel)


def import_json_lines(run: Path, table: Table, name: str) -> None:
    """Commit the records of `run/name` to `table` when the table holds none yet."""
    opened = table.open(run)
    if not opened.keys():
        opened.commit(whole_records(run / name, table.record, table.key))


def whole_records(path: Path, record_type: type[R], key: Callable[[R], str]) -> list[R]:
    """The records of the file's whole lines (a torn last line is cut off first), the first of each key; one that
    does not validate is an InputError naming the file, the line and the field."""
    if not path.exists():
        return []
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)
    records: list[R] = []
    keys: set[str] = set()
    for line, value in iter_json_lines(path, allow_empty=True):
        try:
            record = record_type.model_validate(value)
        except ValidationError as error:
            field, reason = validation_problem(error)
            raise InputError(path, reason, line=line, field=field) from None
        if key(record) not in keys:
            keys.add(key(record))
            records.append(record)
    return records
