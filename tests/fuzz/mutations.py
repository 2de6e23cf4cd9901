"""The mutation classes of the fuzz suite: each turns a reader's valid seed into one kind of changed input.

A generated input carries its class (a BOM added, a value replaced by a 5,000-digit integer, a record repeated,
...), so that the test can hold the reader to what that class calls for (`expectations`). This module holds the
classes of every text format (line endings, a byte-order mark, bytes that are not UTF-8, an empty file, random
byte damage); each format's own classes live in `json_mutations`, `sheet_mutations` and
`parquet_mutations`, and `expectations` says which classes each format has.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Mutated:
    """One generated input."""

    cls: str
    """Its mutation class."""
    data: bytes
    """The file's bytes."""
    record: int | None = None
    """The 1-based line (JSON lines) or list position (a JSON list) of the one record changed, where there is one."""


Strategy = Callable[[bytes, Any], st.SearchStrategy[Mutated]]
"""(seed, the reader's rule-breaking change or None) -> the inputs of one class."""


def _always(_seed: bytes, _change: Any) -> bool:
    return True


@dataclass(frozen=True)
class MutationClass:
    """How to make the inputs of one class from a seed, and whether a seed can give any."""

    strategy: Strategy
    applies: Callable[[bytes, Any], bool] = _always
    """(seed, the reader's rule-breaking change) -> whether the class applies (e.g. the seed has a number)."""


def _fixed(cls: str, change: Callable[[bytes], bytes]) -> MutationClass:
    return MutationClass(lambda seed, _: st.just(Mutated(cls, change(seed))))


def _line_endings(ending: bytes) -> Callable[[bytes], bytes]:
    return lambda seed: seed.replace(b"\r\n", b"\n").replace(b"\n", ending)


def _toggle_bom(seed: bytes) -> bytes:
    return seed.removeprefix(BOM) if seed.startswith(BOM) else BOM + seed


@st.composite
def _not_utf8(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
    """A byte sequence that no UTF-8 text holds, inserted anywhere (inside a character too)."""
    at = draw(st.integers(0, len(seed)))
    bad = draw(st.sampled_from((b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\x80", b"\xf8\x88\x80\x80\x80", b"\xc0\xaf")))
    return Mutated("not-utf8", seed[:at] + bad + seed[at:])


def _empty(seed: bytes, _: Any) -> st.SearchStrategy[Mutated]:
    """Nothing, or nothing but white space and a byte-order mark."""
    texts = (b"", b"\n", b" \r\n\t\n", BOM, BOM + b"\n  \n")
    return st.sampled_from(texts).map(lambda data: Mutated("empty", data))


@st.composite
def random_bytes(draw: st.DrawFn, seed: bytes, _: Any = None) -> Mutated:
    """The seed truncated, its bytes overwritten, junk spliced in, or a line repeated or dropped."""
    how = draw(st.sampled_from(("truncate", "flip", "insert", "repeat-line", "drop-line")))
    at = draw(st.integers(0, len(seed) - 1))
    if how == "truncate":
        return Mutated("bytes", seed[:at])
    if how == "flip":
        data = bytearray(seed)
        for _ in range(draw(st.integers(1, 8))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        return Mutated("bytes", bytes(data))
    if how == "insert":
        junk = draw(st.one_of(st.binary(min_size=1, max_size=16), st.sampled_from(
            (b"\xff", b"\xed\xa0\x80", b'"', b"{", b"]", b",", b"\r", b"\x00", b"\t", b"NaN", b"-Infinity"))))
        return Mutated("bytes", seed[:at] + junk + seed[at:])
    lines = seed.splitlines(keepends=True)
    index = draw(st.integers(0, len(lines) - 1))
    kept = lines[: index + 1] + lines[index:] if how == "repeat-line" else lines[:index] + lines[index + 1 :]
    return Mutated("bytes", b"".join(kept))


TEXT: dict[str, MutationClass] = {
    "crlf": _fixed("crlf", _line_endings(b"\r\n")),
    "cr-only": _fixed("cr-only", _line_endings(b"\r")),
    "bom": _fixed("bom", _toggle_bom),
    "not-utf8": MutationClass(_not_utf8),
    "empty": MutationClass(_empty),
    "bytes": MutationClass(random_bytes),
}
"""The classes of every text format."""

