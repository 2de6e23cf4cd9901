"""Hypothesis strategies that turn a valid file into a malformed one.

Byte-level for every kind (truncation, byte flips, inserted junk, a line repeated or dropped); structural for
JSON (a value of the wrong type, a missing field, deep nesting, huge values, a duplicate key, NaN, a lone
surrogate) and YAML (the same on the parsed value, plus aliases, tags and deep flow nesting); CSV quirks (an
unbalanced quote, a field over the csv module's limit, a NUL, a short or long row, a dropped header); Parquet
corruption (bytes, and tables of the wrong column types, columns dropped, the schema metadata lost).
"""

from __future__ import annotations

import io
import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import strategies as st

NASTY: tuple[Any, ...] = (
    None, True, False, 0, -1, 99, 2**63, 10**30, 1.0, 1.5, -0.0, float("nan"), float("inf"), "", " ", "1", "english",
    "x" * 5000, "\ud800", "[BLANK]", "\u0000", [], [None], {}, {"a": 1}, ["a", "a", "a", "a"],
)
"""Values that a field of the wrong kind may hold."""
_DEEP = 150


@st.composite
def byte_mutation(draw: st.DrawFn, seed: bytes) -> bytes:
    """The seed's bytes truncated, flipped, spliced or with a line repeated or dropped."""
    how = draw(st.sampled_from(("truncate", "flip", "insert", "repeat-line", "drop-line", "empty")))
    if how == "empty" or not seed:
        return draw(st.sampled_from((b"", b"\n", b" \n\n", b"\xef\xbb\xbf", b"\x00")))
    at = draw(st.integers(0, len(seed) - 1))
    if how == "truncate":
        return seed[:at]
    if how == "flip":
        data = bytearray(seed)
        for _ in range(draw(st.integers(1, 8))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        return bytes(data)
    if how == "insert":
        junk = draw(st.one_of(st.binary(min_size=1, max_size=16), st.sampled_from(
            (b"\xff", b"\xed\xa0\x80", b'"', b"{", b"]", b",", b"\r", b"\x00", b"\t", b"NaN", b"-Infinity"))))
        return seed[:at] + junk + seed[at:]
    lines = seed.splitlines(keepends=True)
    index = draw(st.integers(0, len(lines) - 1))
    if how == "repeat-line":
        return b"".join(lines[: index + 1] + lines[index:])
    return b"".join(lines[:index] + lines[index + 1 :])


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside `value` (the root included)."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


def _get(value: Any, path: tuple) -> Any:
    for part in path:
        value = value[part]
    return value


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = [value]
    return value


@st.composite
def value_mutation(draw: st.DrawFn, value: Any) -> Any:
    """`value` (parsed JSON or YAML) with one part changed: replaced, deleted, nested deep, duplicated, renamed."""
    value = json.loads(json.dumps(value))  # a copy
    path = draw(st.sampled_from(_paths(value)))
    how = draw(st.sampled_from(("replace", "replace", "delete", "deep", "duplicate", "unknown-key")))
    replacement = draw(st.sampled_from(NASTY)) if how == "replace" else _nested(_DEEP) if how == "deep" else None
    if not path:
        return replacement if how in ("replace", "deep") else value
    parent, key = _get(value, path[:-1]), path[-1]
    if how in ("replace", "deep"):
        parent[key] = replacement
    elif how == "delete":
        del parent[key]
    elif how == "duplicate" and isinstance(parent, list):
        parent.insert(key, json.loads(json.dumps(parent[key])))
    elif how == "unknown-key" and isinstance(parent, dict):
        parent[f"{key}_extra"] = parent[key]
    return value


@st.composite
def json_mutation(draw: st.DrawFn, seed: bytes, lines: bool) -> bytes:
    """A JSON (or JSON-lines) file with one value changed, or a duplicate key, or a byte-level change."""
    if draw(st.booleans()):
        return draw(byte_mutation(seed))
    documents = [json.loads(line) for line in seed.splitlines() if line.strip()] if lines else [json.loads(seed)]
    index = draw(st.integers(0, len(documents) - 1))
    if draw(st.integers(0, 5)) == 0:  # a duplicate key: the second value wins in Python's json module
        text = json.dumps(documents[index], ensure_ascii=False)
        if text.startswith("{") and len(text) > 2:
            other = draw(st.sampled_from(NASTY))
            key = draw(st.sampled_from(sorted(documents[index]) or ["id"]))
            documents[index] = None
            changed = "{" + json.dumps(key) + ": " + json.dumps(other) + ", " + text[1:]
            return _join(documents, lines, index, changed)
    documents[index] = draw(value_mutation(documents[index]))
    return _join(documents, lines, index, None)


def _join(documents: list[Any], lines: bool, index: int, replaced: str | None) -> bytes:
    texts = [replaced if n == index and replaced is not None else json.dumps(doc, ensure_ascii=False)
             for n, doc in enumerate(documents)]
    return ("".join(text + "\n" for text in texts) if lines else texts[0]).encode("utf-8", "surrogatepass")


@st.composite
def yaml_mutation(draw: st.DrawFn, seed: bytes) -> bytes:
    """A YAML file changed as JSON (YAML's subset), at byte level, or with YAML's own hazards."""
    import yaml

    how = draw(st.sampled_from(("bytes", "value", "value", "hazard")))
    if how == "bytes":
        return draw(byte_mutation(seed))
    if how == "value":
        return draw(json_mutation(json.dumps(yaml.safe_load(seed)).encode("utf-8"), lines=False))
    return draw(st.sampled_from((
        b"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n",
        b"x: !!python/object/apply:os.system ['true']\n", b"[" * 5000 + b"]" * 5000, b"- " * 3000 + b"x",
        b"x: 1\nx: 2\n", b"x: " + b"9" * 5000 + b"\n", b"%YAML 9.9\n---\nx: 1\n", b"--- 1\n--- 2\n", b"? [a]\n: b\n",
        b"x: .nan\n", b"x: !!binary AAAA\n", b"\t- x\n",
    )))


@st.composite
def csv_mutation(draw: st.DrawFn, seed: bytes) -> bytes:
    """A CSV sheet with one of the quirks spreadsheets and hands produce, or a byte-level change."""
    how = draw(st.sampled_from(("bytes", "quote", "huge", "nul", "short-row", "long-row", "no-header", "cell", "cr")))
    text = seed.decode("utf-8")
    lines = text.splitlines(keepends=True)
    row = draw(st.integers(0, len(lines) - 1))
    if how == "bytes":
        return draw(byte_mutation(seed))
    if how == "quote":
        at = draw(st.integers(0, len(text)))
        return (text[:at] + '"' + text[at:]).encode("utf-8")
    if how == "huge":
        return (text.rstrip("\n") + ',"' + "x" * 200_000 + '"\n').encode("utf-8")
    if how == "nul":
        return (text[: len(text) // 2] + "\x00" + text[len(text) // 2 :]).encode("utf-8")
    if how == "short-row":
        lines[row] = lines[row].split(",")[0] + "\n"
    elif how == "long-row":
        lines[row] = lines[row].rstrip("\n") + ",extra,extra\n"
    elif how == "no-header":
        lines = lines[1:]
    elif how == "cr":
        return text.replace("\n", "\r").encode("utf-8")
    else:
        cells = lines[row].rstrip("\n").split(",")
        cells[draw(st.integers(0, len(cells) - 1))] = draw(st.sampled_from(
            ("", " ", "-1", "99", "2.5", "yes", "english", "x" * 300, "\ufeff", '"a,b"', "٣")))
        lines[row] = ",".join(cells) + "\n"
    return "".join(lines).encode("utf-8")


@st.composite
def parquet_mutation(draw: st.DrawFn, seed: bytes) -> bytes:
    """A Parquet file corrupted at byte level, or a well-formed table of the wrong shape or values."""
    if draw(st.booleans()):
        return draw(byte_mutation(seed))
    table = pq.read_table(io.BytesIO(seed))
    how = draw(st.sampled_from(("drop", "cast", "metadata", "duplicate", "values")))
    column = draw(st.sampled_from(table.schema.names))
    index = table.schema.get_field_index(column)
    if how == "drop":
        table = table.remove_column(index)
    elif how == "cast":
        table = table.set_column(index, column, pa.array([json.dumps(v) for v in table[column].to_pylist()]))
    elif how == "metadata":
        table = table.replace_schema_metadata(draw(st.sampled_from(({}, {b"crossknow.item_type": b"QAItem"}))))
    elif how == "duplicate":
        table = pa.concat_tables([table, table.slice(0, 1)])
    else:
        values = table[column].to_pylist()
        values[draw(st.integers(0, len(values) - 1))] = None
        if column == "metadata":
            values[0] = draw(st.sampled_from(('{"a": NaN}', "[" * 200, '"\\ud800"', "not json", "1" * 5000)))
        table = table.set_column(index, column, pa.array(values, table.schema.field(column).type))
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def mutation(kind: str, seed: bytes) -> st.SearchStrategy[bytes]:
    """The strategy of malformed files of `kind` made from `seed`."""
    if kind == "jsonl":
        return json_mutation(seed, lines=True)
    if kind == "json":
        return json_mutation(seed, lines=False)
    if kind == "yaml":
        return yaml_mutation(seed)
    if kind == "csv":
        return csv_mutation(seed)
    if kind == "parquet":
        return parquet_mutation(seed)
    return byte_mutation(seed)
