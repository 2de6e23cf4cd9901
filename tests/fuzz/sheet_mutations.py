"""Mutation classes of CSV sheets and TSV dictionaries: the quirks spreadsheets and hands produce.

A sheet is read as its header and data rows and written back with the csv module (its byte-order mark kept), so
that a class changes one thing: a cell padded with spaces, the header dropped, a cell over the csv module's
field limit, an integer cell past Python's digit limit or past 64 bits, a row repeated, a row against the
reader's own rules; `quirk` is the rest of what hands do (an unbalanced quote, a NUL, a short or long row, an odd
cell), whose outcome depends on where it lands.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import replace
from typing import Any

from hypothesis import strategies as st

from tests.fuzz.json_mutations import HUGE_INTEGERS, LONG_INTEGERS
from tests.fuzz.mutations import BOM, Mutated, MutationClass

_INTEGER = re.compile(r"[0-9]+")


def _rows(seed: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(seed.removeprefix(BOM).decode("utf-8"), newline="")))


def _written(seed: bytes, rows: list[list[str]]) -> bytes:
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    return (BOM if seed.startswith(BOM) else b"") + text.getvalue().encode("utf-8")


@st.composite
def _padded(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
    """Spaces around data cells (the readers strip cells) and blank lines at the end."""
    header, *rows = _rows(seed)
    pad = st.sampled_from(("", " ", "  "))
    padded = [[draw(pad) + cell + draw(pad) for cell in row] for row in rows]
    return Mutated("whitespace", _written(seed, [header, *padded]) + draw(st.sampled_from((b"", b"\n", b"\n\n"))))


def integer_cells(seed: bytes) -> list[tuple[int, int]]:
    """(row, column) of every data cell that holds an integer."""
    return _cells(seed, _INTEGER.fullmatch)


def with_cell(seed: bytes, row: int, column: int, text: str) -> Mutated:
    """The sheet with one cell replaced."""
    rows = _rows(seed)
    rows[row][column] = text
    return Mutated("", _written(seed, rows))


def _cells(seed: bytes, keep) -> list[tuple[int, int]]:
    """(row, column) of every data cell for which `keep(text)` holds (row 1 is the first data row)."""
    return [(r, c) for r, row in enumerate(_rows(seed)) if r for c, cell in enumerate(row) if keep(cell)]


def _replacing_cell(cls: str, keep, values: st.SearchStrategy[str]) -> MutationClass:
    @st.composite
    def strategy(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
        row, column = draw(st.sampled_from(_cells(seed, keep)))
        return replace(with_cell(seed, row, column, draw(values)), cls=cls)

    return MutationClass(strategy, lambda seed, _: bool(_cells(seed, keep)))


@st.composite
def _huge_cell(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
    """A data row with a cell past the csv module's field limit (131,072 characters)."""
    rows = _rows(seed)
    rows[draw(st.integers(1, len(rows) - 1))].append("x" * 200_000)
    return Mutated("huge-cell", _written(seed, rows))


@st.composite
def _repeated_row(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
    lines = seed.splitlines(keepends=True)
    at = draw(st.integers(1, len(lines) - 1))
    return Mutated("repeated-record", b"".join(lines[: at + 1] + lines[at:]))


@st.composite
def _csv_rule_violation(draw: st.DrawFn, seed: bytes, change) -> Mutated:
    header, *rows = _rows(seed)
    at = draw(st.integers(0, len(rows) - 1))
    rows[at] = list(change(dict(zip(header, rows[at], strict=True))).values())
    return Mutated("rule-violation", _written(seed, [header, *rows]))


@st.composite
def _quirk(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
    """An unbalanced quote, a NUL, a row short of cells or with cells past the header, or an odd cell."""
    text = seed.decode("utf-8")
    lines = text.splitlines(keepends=True)
    row = draw(st.integers(0, len(lines) - 1))
    how = draw(st.sampled_from(("quote", "nul", "short-row", "long-row", "cell")))
    if how in ("quote", "nul"):
        at = draw(st.integers(0, len(text)))
        return Mutated("quirk", (text[:at] + ('"' if how == "quote" else "\x00") + text[at:]).encode("utf-8"))
    if how == "short-row":
        lines[row] = lines[row].split(",")[0] + "\n"
    elif how == "long-row":
        lines[row] = lines[row].rstrip("\n") + ",extra,extra\n"
    else:
        cells = lines[row].rstrip("\n").split(",")
        cells[draw(st.integers(0, len(cells) - 1))] = draw(st.sampled_from(
            ("", " ", "-1", "99", "2.5", "+1", "yes", "english", "x" * 300, "\ufeff", '"a,b"', "٣", "1e3")))
        lines[row] = ",".join(cells) + "\n"
    return Mutated("quirk", "".join(lines).encode("utf-8"))


CSV: dict[str, MutationClass] = {
    "whitespace": MutationClass(_padded),
    "no-header": MutationClass(lambda seed, _: st.just(Mutated("no-header", b"".join(seed.splitlines(True)[1:])))),
    "huge-cell": MutationClass(_huge_cell),
    "huge-int": _replacing_cell("huge-int", _INTEGER.fullmatch, HUGE_INTEGERS),
    "long-int": _replacing_cell("long-int", _INTEGER.fullmatch, LONG_INTEGERS),
    "repeated-record": MutationClass(_repeated_row),
    "rule-violation": MutationClass(_csv_rule_violation, lambda _, change: change is not None),
    "quirk": MutationClass(_quirk),
}
"""The classes of CSV sheets."""


def _tsv_lines(seed: bytes) -> list[str]:
    return seed.removeprefix(BOM).decode("utf-8").splitlines()


@st.composite
def _tsv_layout(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
    """Spaces around fields, and blank and comment lines between the lines."""
    out = []
    for line in _tsv_lines(seed):
        out += [draw(st.sampled_from(("", "\n", "# a comment\n", "  \n")))]
        pad = st.sampled_from(("", " ", "  "))
        out += ["\t".join(draw(pad) + field + draw(pad) for field in line.split("\t")) + "\n"]
    return Mutated("whitespace", "".join(out).encode("utf-8"))


@st.composite
def _field_count(draw: st.DrawFn, seed: bytes, _: Any) -> Mutated:
    """A data line with a field too few or too many."""
    lines = _tsv_lines(seed)
    at = draw(st.integers(1, len(lines) - 1))
    fields = lines[at].split("\t")
    lines[at] = "\t".join(fields[:-1] if draw(st.booleans()) else [*fields, "extra"])
    return Mutated("field-count", "".join(line + "\n" for line in lines).encode("utf-8"), at + 1)


@st.composite
def _tsv_rule_violation(draw: st.DrawFn, seed: bytes, change) -> Mutated:
    header, *rows = _tsv_lines(seed)
    at = draw(st.integers(0, len(rows) - 1))
    rows[at] = "\t".join(change(dict(zip(header.split("\t"), rows[at].split("\t"), strict=True))).values())
    return Mutated("rule-violation", "".join(line + "\n" for line in [header, *rows]).encode("utf-8"), at + 2)


TSV: dict[str, MutationClass] = {
    "whitespace": MutationClass(_tsv_layout),
    "field-count": MutationClass(_field_count),
    "repeated-record": MutationClass(_repeated_row),
    "rule-violation": MutationClass(_tsv_rule_violation, lambda _, change: change is not None),
}
"""The classes of TSV dictionaries."""
