"""Mutation classes of Parquet item tables: the file's bytes, and well-formed tables of the wrong shape or values.

`rewritten` writes the same table with other encodings (no compression, no dictionary, one row per row group);
`truncated` cuts the file before its footer; the rest change the table (a column dropped, the schema's item type
lost, a row repeated) or one value of the JSON metadata column (nested too deep, not finite, a lone surrogate, an
integer past Python's digit limit or past 64 bits), or break a rule of the items (an answer out of range).
"""

from __future__ import annotations

import io
import json
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import strategies as st

from tests.fuzz.json_mutations import HUGE_INTEGERS, LONG_INTEGERS, NON_FINITE, SURROGATES
from tests.fuzz.mutations import Mutated, MutationClass, random_bytes


def _table(seed: bytes) -> pa.Table:
    return pq.read_table(io.BytesIO(seed))


def _written(table: pa.Table, **options: Any) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, **options)
    return sink.getvalue()


def _with_column(table: pa.Table, name: str, values: list[Any]) -> pa.Table:
    index = table.schema.get_field_index(name)
    return table.set_column(index, table.schema.field(index), pa.array(values, table.schema.field(index).type))


@st.composite
def _rewritten(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
    options = draw(st.sampled_from(({"compression": "none"}, {"use_dictionary": False}, {"row_group_size": 1},
                                    {"compression": "zstd", "data_page_version": "2.0"})))
    return Mutated("rewritten", _written(_table(seed), **options))


@st.composite
def _truncated(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
    return Mutated("truncated", seed[: draw(st.integers(0, len(seed) - 1))])


@st.composite
def _dropped_column(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
    table = _table(seed)
    return Mutated("drop-column", _written(table.remove_column(draw(st.integers(0, table.num_columns - 1)))))


@st.composite
def _metadata_lost(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
    metadata = draw(st.sampled_from(({}, {b"crossknow.item_type": b"QAItem"}, {b"crossknow.item_type": b"\xff"})))
    return Mutated("metadata-lost", _written(_table(seed).replace_schema_metadata(metadata)))


@st.composite
def _repeated_row(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
    table = _table(seed)
    at = draw(st.integers(0, table.num_rows - 1))
    repeated = pa.concat_tables([table.slice(0, at + 1), table.slice(at)])
    return Mutated("repeated-record", _written(repeated), at + 2)


@st.composite
def _cast_column(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
    """A column written as the JSON text of its values (strings quoted, lists as text)."""
    table = _table(seed)
    name = draw(st.sampled_from(table.schema.names))
    index = table.schema.get_field_index(name)
    values = pa.array([json.dumps(value) for value in table[name].to_pylist()])
    return Mutated("cast-column", _written(table.set_column(index, name, values)))


@st.composite
def _null_value(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
    table = _table(seed)
    name = draw(st.sampled_from(table.schema.names))
    values = table[name].to_pylist()
    at = draw(st.integers(0, len(values) - 1))
    values[at] = None
    return Mutated("null-value", _written(_with_column(table, name, values)), at + 1)


def metadata_keys(seed: bytes, keep=lambda value: True) -> list[tuple[int, str]]:
    """(row, key) of every value of the metadata column's JSON objects for which `keep` holds."""
    rows = [json.loads(text) for text in _table(seed)["metadata"].to_pylist()]
    return [(row, key) for row, metadata in enumerate(rows) for key, value in metadata.items() if keep(value)]


def with_metadata_value(seed: bytes, row: int, key: str, literal: str) -> Mutated:
    """The table with one value of one row's metadata JSON replaced by literal JSON text."""
    table = _table(seed)
    values = table["metadata"].to_pylist()
    values[row] = json.dumps({**json.loads(values[row]), key: "@"}).replace('"@"', literal)
    return Mutated("", _written(_with_column(table, "metadata", values)), row + 1)


def _metadata_value(cls: str, literals: st.SearchStrategy[str]) -> MutationClass:
    """One value of a row's metadata JSON text replaced by a literal."""

    @st.composite
    def strategy(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
        row, key = draw(st.sampled_from(metadata_keys(seed)))
        return replace(with_metadata_value(seed, row, key, draw(literals)), cls=cls)

    return MutationClass(strategy, lambda seed, _: bool(metadata_keys(seed)))


@st.composite
def _answer_out_of_range(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
    table = _table(seed)
    options = table["options"].to_pylist()
    at = draw(st.integers(0, table.num_rows - 1))
    answers = table["answer"].to_pylist()
    answers[at] = len(options[at]) + draw(st.integers(0, 3))
    return Mutated("rule-violation", _written(_with_column(table, "answer", answers)), at + 1)


CLASSES: dict[str, MutationClass] = {
    "rewritten": MutationClass(_rewritten),
    "truncated": MutationClass(_truncated),
    "bytes": MutationClass(random_bytes),
    "drop-column": MutationClass(_dropped_column),
    "metadata-lost": MutationClass(_metadata_lost),
    "repeated-record": MutationClass(_repeated_row),
    "cast-column": MutationClass(_cast_column),
    "null-value": MutationClass(_null_value),
    "deep": _metadata_value("deep", st.just("[" * 150 + "]" * 150)),
    "non-finite": _metadata_value("non-finite", NON_FINITE),
    "lone-surrogate": _metadata_value("lone-surrogate", SURROGATES),
    "huge-int": _metadata_value("huge-int", HUGE_INTEGERS),
    "long-int": _metadata_value("long-int", LONG_INTEGERS),
    "rule-violation": MutationClass(_answer_out_of_range),
}
"""The classes of Parquet item tables."""
