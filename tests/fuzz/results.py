"""What a reader returned, seen from outside the reader: its records, its invalid records, its count, its value.

- `normal(result)`: the result as plain data, to compare a mutated file's result with the seed's.
- `revalidate(result)`: every saved record in it validates again as its own schema and comes back equal, and
  every multiple-choice question in it keeps the one rule of options (`schemas.check_choices`), so that a reader
  cannot return a record its own checks would refuse.
- `accounted(result)`: how many records of the file the result accounts for (usable plus reported invalid), to
  hold against the file's own count (`records_in`): a record silently dropped shows as one missing.
- `invalid_records(result)`: the records reported as unusable.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from functools import singledispatch
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from pydantic import BaseModel

from crossknow.adaxeval.annotate import ScoreTable
from crossknow.data.schemas import LANGUAGE_TAG, InvalidRecord, ItemSet, check_choices
from crossknow.pitfalls.flaws import PairFile
from crossknow.pitfalls.probe.sources import SourceFile, SourceSample
from crossknow.pitfalls.simulate import MCQuestion
from tests.fuzz.mutations import BOM


def normal(value: Any) -> Any:
    """`value` as plain data: records dumped, dataclasses and other objects as their fields, tables as rows."""
    if isinstance(value, BaseModel):
        return normal(value.model_dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: normal(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, pa.Table):
        return value.to_pylist()
    if isinstance(value, dict):
        return {key: normal(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [normal(item) for item in value]
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return normal(vars(value))
    return value


def _parts(value: Any) -> list[Any]:
    """The values directly inside `value` (a record is not looked into: it is revalidated whole)."""
    if isinstance(value, BaseModel | str | bytes | pa.Table):
        return []
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [getattr(value, field.name) for field in dataclasses.fields(value)]
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list | tuple | set):
        return list(value)
    return list(vars(value).values()) if hasattr(value, "__dict__") and not isinstance(value, type) else []


def revalidate(result: Any) -> None:
    """Assert that every record in `result` validates again as its own type, equal to itself, and that every
    multiple-choice question keeps the options' rule."""
    stack = [result]
    while stack:
        value = stack.pop()
        if isinstance(value, BaseModel):
            again = type(value).model_validate(value.model_dump())
            assert again == value, f"{type(value).__name__} changes when validated again: {value!r}"
        elif isinstance(value, MCQuestion):
            check_choices(value.choices, value.answer, "choice")
            assert 0 <= value.answer and value.question.strip() and LANGUAGE_TAG.match(value.lang), value
        stack += _parts(value)


@singledispatch
def accounted(result: Any) -> int:
    """How many of the file's records the result accounts for."""
    raise TypeError(f"no count for a {type(result).__name__}")


@accounted.register
def _(result: ItemSet) -> int:
    return len(result.items) + len(result.invalid)


@accounted.register(list)
@accounted.register(dict)
def _(result: list | dict) -> int:
    return len(result)


@accounted.register
def _(result: pa.Table) -> int:
    return result.num_rows


@accounted.register
def _(result: PairFile) -> int:
    return len(result.pairs) + len(result.invalid)


@accounted.register
def _(result: SourceFile) -> int:
    return len(result.questions) + len(result.invalid)


@accounted.register
def _(result: tuple) -> int:  # pairs to categorise and the records that are no pair
    return sum(len(part) for part in result)


@accounted.register
def _(result: ScoreTable) -> int:
    return sum(result.items.values())


@accounted.register
def _(result: SourceSample) -> int:
    return 1


@singledispatch
def invalid_records(result: Any) -> list[InvalidRecord]:
    """The records the reader reported as unusable."""
    raise TypeError(f"a {type(result).__name__} reports no invalid records")


@invalid_records.register(ItemSet)
@invalid_records.register(PairFile)
@invalid_records.register(SourceFile)
def _(result: ItemSet | PairFile | SourceFile) -> list[InvalidRecord]:
    return result.invalid


@invalid_records.register
def _(result: tuple) -> list[InvalidRecord]:
    return result[1]


def records_in(kind: str, data: bytes) -> int:
    """The records of a file that a reader returned for: non-blank lines of JSON lines, elements of a JSON list
    (1 for any other document), rows of a CSV sheet, data lines of a TSV dictionary, rows of a Parquet table, keys
    of a YAML mapping."""
    if kind == "parquet":
        return pq.read_metadata(io.BytesIO(data)).num_rows
    text = data.removeprefix(BOM).decode("utf-8")
    if kind == "jsonl":
        return sum(1 for line in text.split("\n") if line.strip())
    if kind == "json":
        value = json.loads(text)
        return len(value) if isinstance(value, list) else 1
    if kind == "csv":
        return sum(1 for _ in csv.DictReader(io.StringIO(text, newline="")))
    if kind == "tsv":
        lines = [line for line in text.split("\n") if line.strip() and not line.startswith("#")]
        return len(lines) - 1
    return len(yaml.safe_load(text))
