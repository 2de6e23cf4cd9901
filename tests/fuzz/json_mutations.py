"""Mutation classes of JSON lines, JSON documents and YAML tables, made on the parsed value and written back.

Value classes (one value replaced by a 150-deep nesting, a non-finite number, a lone surrogate, an integer past
Python's digit limit or past 64 bits, a value of the wrong type; a field deleted, a key added or given twice, a
record repeated, a record that breaks the reader's own rules) write the value back as JSON, which YAML reads too.
Syntax classes (truncated inside a record, a junk line) work on the seed's bytes; `whitespace` writes the same
value in another layout.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import yaml
from hypothesis import strategies as st

from tests.fuzz.mutations import BOM, Mutated, MutationClass

MARK = "@@fuzz-literal@@"
"""Stands for a literal that json.dumps would not write (an integer past the limits, NaN, a lone surrogate's
escape, a duplicate key) until the text is written."""
NASTY: tuple[Any, ...] = (
    None, True, False, 0, -1, 99, 1.0, 1.5, -0.0, "", " ", "1", "english", "x" * 5000, "[BLANK]", "\u0000", [],
    [None], {}, {"a": 1}, ["a", "a", "a", "a"],
)
"""Values that a field of the wrong kind may hold."""
_DEEP = 150


def _signed(digits: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(digits, digits.map(lambda text: "-" + text))


HUGE_INTEGERS = _signed(st.sampled_from((4301, 5000)).map(lambda digits: "9" * digits))
"""Integers past Python's limit on converting text to int (4,300 digits)."""
LONG_INTEGERS = st.one_of(_signed(st.integers(4250, 4300).map(lambda digits: "9" * digits)),
                          st.sampled_from((str(2**63), str(-(2**63) - 1), "9" * 20)))
"""Integers Python reads, outside the 64-bit range."""
SURROGATES = st.sampled_from(('"\\ud800"', '"a\\udfffb"', '"\\udc00\\ud800"', '"x\\ud83d"'))
"""JSON strings holding a lone surrogate."""
NON_FINITE = st.sampled_from(("NaN", "Infinity", "-Infinity", "1e400", "-1e999", "9" * 400 + ".5"))
"""Numbers Python's json module reads, that are not finite."""


def parse(seed: bytes, kind: str) -> list[Any]:
    """The seed's documents: one per non-blank line of JSON lines, else the one document."""
    text = seed.removeprefix(BOM).decode("utf-8")
    if kind == "jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return [json.loads(text) if kind == "json" else yaml.safe_load(text)]


def write(docs: list[Any], kind: str, literal: str | None = None) -> bytes:
    """The documents as JSON lines or one JSON document (YAML reads JSON), MARK replaced by `literal`."""
    if kind == "jsonl":
        text = "".join(json.dumps(doc, ensure_ascii=False) + "\n" for doc in docs)
    else:
        text = json.dumps(docs[0], ensure_ascii=False, indent=1) + "\n"
    if literal is not None:
        text = text.replace(json.dumps(MARK), literal)
    return text.encode("utf-8", "surrogatepass")


def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside `value` (the root included)."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*prefix, index))
    return found


def _get(value: Any, path: tuple) -> Any:
    for part in path:
        value = value[part]
    return value


def _set(docs: list[Any], path: tuple, new: Any) -> None:
    _get(docs, path[:-1])[path[-1]] = new


def is_number(value: Any) -> bool:
    """Whether a parsed value is a number (a boolean is none)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _values(docs: list[Any], keep=lambda value: True) -> list[tuple]:
    """Paths (from the list of documents) to every value for which `keep` holds."""
    return [path for path in paths(docs)[1:] if keep(_get(docs, path))]


def _strings(docs: list[Any]) -> list[tuple]:
    return _values(docs, lambda value: isinstance(value, str))


def numbers(docs: list[Any]) -> list[tuple]:
    """Paths to every number (not a boolean) of the documents."""
    return _values(docs, is_number)


def with_literal(docs: list[Any], kind: str, path: tuple, literal: str) -> Mutated:
    """The documents written back with the value at `path` replaced by literal JSON text."""
    changed = json.loads(json.dumps(docs))
    _set(changed, path, MARK)
    return Mutated("", write(changed, kind, literal), record_line(changed, kind, path))


def record_line(docs: list[Any], kind: str, path: tuple) -> int | None:
    """The 1-based line (JSON lines) or list position (a JSON list) of the record a path lies in."""
    if kind == "jsonl":
        return path[0] + 1
    if kind == "json" and isinstance(docs[0], list) and len(path) > 1:
        return path[1] + 1
    return None


def records(docs: list[Any], kind: str) -> list[tuple]:
    """Paths to the records: each line of JSON lines, each element of a JSON list, else the document."""
    if kind == "jsonl":
        return [(index,) for index in range(len(docs))]
    if kind == "json" and isinstance(docs[0], list):
        return [(0, index) for index in range(len(docs[0]))]
    return [(0,)]


def _replacing(cls: str, kind: str, where, values: st.SearchStrategy[Any], literal: bool = False) -> MutationClass:
    """One value, among the paths `where(docs)` gives, replaced by a drawn value (or literal JSON text)."""

    @st.composite
    def strategy(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
        docs = parse(seed, kind)
        path = draw(st.sampled_from(where(docs)))
        value = draw(values)
        if literal:
            return replace(with_literal(docs, kind, path, value), cls=cls)
        _set(docs, path, value)
        return Mutated(cls, write(docs, kind), record_line(docs, kind, path))

    return MutationClass(strategy, lambda seed, _: bool(where(parse(seed, kind))))


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = [value]
    return value


def _value_classes(kind: str) -> dict[str, MutationClass]:
    """The classes made on parsed values, for JSON lines, JSON and YAML alike."""
    return {
        "deep": _replacing("deep", kind, _values, st.just(_nested(_DEEP))),
        "lone-surrogate": _replacing("lone-surrogate", kind, _strings, SURROGATES, literal=True),
        "huge-int": _replacing("huge-int", kind, numbers, HUGE_INTEGERS, literal=True),
        "long-int": _replacing("long-int", kind, numbers, LONG_INTEGERS, literal=True),
        "wrong-type": _replacing("wrong-type", kind, _values, st.sampled_from(NASTY)),
        "missing-field": _deleting(kind),
        "unknown-key": _unknown_key(kind),
        "repeated-record": _repeating(kind),
        "rule-violation": _rule_violation(kind),
    }


def _deleting(kind: str) -> MutationClass:
    def keyed(docs: list[Any]) -> list[tuple]:
        return [path for path in paths(docs)[1:] if isinstance(path[-1], str)]

    @st.composite
    def strategy(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
        docs = parse(seed, kind)
        path = draw(st.sampled_from(keyed(docs)))
        del _get(docs, path[:-1])[path[-1]]
        return Mutated("missing-field", write(docs, kind), record_line(docs, kind, path))

    return MutationClass(strategy, lambda seed, _: bool(keyed(parse(seed, kind))))


def _unknown_key(kind: str) -> MutationClass:
    """One record given a key that no format of crossknow's names."""

    @st.composite
    def strategy(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
        docs = parse(seed, kind)
        path = draw(st.sampled_from(records(docs, kind)))
        _set(docs, path, _get(docs, path) | {"zz_unknown": draw(st.sampled_from((1, "x", None, {}, [])))})
        return Mutated("unknown-key", write(docs, kind), record_line(docs, kind, path))

    return MutationClass(strategy, lambda seed, _: _objects(seed, kind))


def _objects(seed: bytes, kind: str) -> bool:
    """Whether every record of the seed is an object (a JSON object, a YAML mapping)."""
    docs = parse(seed, kind)
    return all(isinstance(_get(docs, path), dict) for path in records(docs, kind))


def _repeating(kind: str) -> MutationClass:
    """One record given twice in a row (the second is the one changed)."""

    @st.composite
    def strategy(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
        docs = parse(seed, kind)
        path = draw(st.sampled_from(records(docs, kind)))
        container = _get(docs, path[:-1])
        container.insert(path[-1] + 1, json.loads(json.dumps(container[path[-1]])))
        return Mutated("repeated-record", write(docs, kind), record_line(docs, kind, path) + 1)

    return MutationClass(strategy, lambda seed, _: kind != "yaml" and records(parse(seed, kind), kind) != [(0,)])


def _rule_violation(kind: str) -> MutationClass:
    """One record changed by the reader's own rule-breaking change (an answer out of range, a language that is
    no language tag, ...): well-formed, and against a rule of the reader."""

    @st.composite
    def strategy(draw: st.DrawFn, seed: bytes, change) -> Mutated:
        docs = parse(seed, kind)
        path = draw(st.sampled_from(records(docs, kind)))
        _set(docs, path, change(json.loads(json.dumps(_get(docs, path)))))
        return Mutated("rule-violation", write(docs, kind), record_line(docs, kind, path))

    return MutationClass(strategy, lambda _, change: change is not None)


@st.composite
def _duplicate_key(draw: st.DrawFn, seed: bytes, kind: str) -> Mutated:
    """A record whose first key is given twice, first with a value of the wrong kind (the last one counts)."""
    docs = parse(seed, kind)
    path = draw(st.sampled_from(records(docs, kind)))
    record = _get(docs, path)
    key = next(iter(record))
    _set(docs, path, MARK)
    text = json.dumps(record, ensure_ascii=False)
    literal = "{" + json.dumps(key) + ": " + json.dumps(draw(st.sampled_from(NASTY))) + ", " + text[1:]
    return Mutated("duplicate-key", write(docs, kind, literal), record_line(docs, kind, path))


@st.composite
def _truncated(draw: st.DrawFn, seed: bytes, lines: bool) -> Mutated:
    """The file cut strictly inside one record (a JSON line, or the one document): after its first byte,
    before its last."""
    starts = [0]
    if lines:
        starts = [offset for offset, line in _line_offsets(seed) if line.strip()]
    start = draw(st.sampled_from(starts))
    end = seed.index(b"\n", start) if lines and b"\n" in seed[start:] else len(seed)
    body = seed[start:end]
    first, last = start + len(body) - len(body.lstrip()), start + len(body.rstrip())
    cut = draw(st.integers(first + 1, last - 1))
    return Mutated("truncated", seed[:cut], seed.count(b"\n", 0, start) + 1 if lines else None)


def _line_offsets(seed: bytes) -> list[tuple[int, bytes]]:
    offsets, at = [], 0
    for line in seed.splitlines(keepends=True):
        offsets.append((at, line))
        at += len(line)
    return offsets


@st.composite
def _junk_line(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
    """A line that is no JSON object, inserted between the lines of a JSON-lines file."""
    lines = seed.splitlines(keepends=True)
    at = draw(st.integers(0, len(lines)))
    junk = draw(st.sampled_from((b"not json", b"{", b"}", b"]", b'{"a": }', b"nul", b"'x'", b"[1, 2]", b"1",
                                 b'"text"', b"{}x", b"{\"a\": 1} {\"b\": 2}")))
    return Mutated("junk", b"".join(lines[:at]) + junk + b"\n" + b"".join(lines[at:]), at + 1)


@st.composite
def _junk_around(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
    """Text that is no JSON before or after the one document."""
    junk = draw(st.sampled_from((b",", b"]", b"}", b"x", b"{}", b"[]", b"null", b'"x"', b"#")))
    return Mutated("junk", seed + b"\n" + junk if draw(st.booleans()) else junk + b"\n" + seed)


@st.composite
def _json_layout(draw: st.DrawFn, seed: bytes, kind: str) -> Mutated:
    """The same value in another layout: separators, indentation, escapes, blank lines at the end."""
    docs = parse(seed, kind)
    separators = draw(st.sampled_from(((",", ":"), (", ", ": "), (" ,  ", " :\t"))))
    ascii_only = draw(st.booleans())
    pad = st.sampled_from(("", " ", "\t", " \t "))
    if kind == "jsonl":
        text = "".join(draw(pad) + json.dumps(doc, ensure_ascii=ascii_only, separators=separators) + draw(pad) + "\n"
                       for doc in docs)
    else:
        indent = draw(st.sampled_from((None, 0, 2, "\t")))
        text = draw(pad) + json.dumps(docs[0], ensure_ascii=ascii_only, separators=separators, indent=indent)
    text += draw(st.sampled_from(("", "\n", "\n\n", " \n\t\n")))
    return Mutated("whitespace", text.encode("utf-8"))


def _json_classes(kind: str) -> dict[str, MutationClass]:
    lines = kind == "jsonl"
    return {
        "whitespace": MutationClass(lambda seed, _: _json_layout(seed, kind)),
        "truncated": MutationClass(lambda seed, _: _truncated(seed, lines)),
        "junk": MutationClass(_junk_line if lines else _junk_around),
        "non-finite": _replacing("non-finite", kind, _values, NON_FINITE, literal=True),
        "duplicate-key": MutationClass(lambda seed, _: _duplicate_key(seed, kind),
                                       lambda seed, _: _objects(seed, kind)),
        **_value_classes(kind),
    }


@st.composite
def _yaml_layout(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
    """The same table with comments and blank lines around it."""
    head = draw(st.sampled_from((b"", b"# a comment\n", b"\n# a comment\n\n")))
    tail = draw(st.sampled_from((b"", b"\n", b"\n# the end\n\n")))
    body = seed if seed.endswith(b"\n") else seed + b"\n"
    return Mutated("whitespace", head + body + tail)


YAML_HAZARDS = (
    b"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n",
    b"x: !!python/object/apply:os.system ['true']\n", b"[" * 5000 + b"]" * 5000, b"- " * 3000 + b"x",
    b"x: 1\nx: 2\n", b"x: " + b"9" * 5000 + b"\n", b"%YAML 9.9\n---\nx: 1\n", b"--- 1\n--- 2\n", b"? [a]\n: b\n",
    b"x: .nan\n", b"x: !!binary AAAA\n", b"\t- x\n",
)
"""Whole YAML files of YAML's own hazards, none of them a table of any reader."""

YAML: dict[str, MutationClass] = {
    "whitespace": MutationClass(_yaml_layout),
    "junk": MutationClass(lambda seed, _: st.sampled_from((b"\nzz: [unclosed\n", b"]\n")).map(
        lambda junk: Mutated("junk", seed + junk if junk.startswith(b"\n") else junk + seed))),
    "hazard": MutationClass(lambda seed, _: st.sampled_from(YAML_HAZARDS).map(lambda data: Mutated("hazard", data))),
    **_value_classes("yaml"),
}
"""The classes of YAML tables."""
LINES = _json_classes("jsonl")
"""The classes of JSON-lines files."""
DOCUMENT = _json_classes("json")
"""The classes of files of one JSON document."""
