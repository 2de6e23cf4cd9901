"""What each mutation class calls for, per file kind and per reader.

- READ_EQUAL: the file holds what the seed holds (another layout, line endings, a byte-order mark): the reader
  returns what it returns for the seed.
- REFUSED: an InputError naming the file (a file that is not UTF-8, truncated, nested too deep, with a number
  outside the limits, ...).
- DROPPED: the reader returns, with the changed record in its invalid records (readers that report records
  they cannot use rather than refuse them).
- CHECKED: the change may or may not leave a valid file (random bytes, a value of another type): the reader
  refuses by name, or returns what its checks allow (`results.check_returned`).

A class without a default here (unknown-key, repeated-record, rule-violation) is stated by every reader that
has it (`seeds.Reader.expect`).
"""

from __future__ import annotations

from tests.fuzz import json_mutations, parquet_mutations, sheet_mutations
from tests.fuzz.mutations import TEXT, MutationClass

READ_EQUAL, REFUSED, DROPPED, CHECKED = "read equal", "refused", "dropped", "read or refused"

CLASSES: dict[str, dict[str, MutationClass]] = {
    "jsonl": TEXT | json_mutations.LINES,
    "json": TEXT | json_mutations.DOCUMENT,
    "yaml": TEXT | json_mutations.YAML,
    "csv": TEXT | sheet_mutations.CSV,
    "tsv": TEXT | sheet_mutations.TSV,
    "parquet": parquet_mutations.CLASSES,
}
"""The mutation classes of each file kind, by name."""

DEFAULTS: dict[str, str] = {
    **dict.fromkeys(("whitespace", "crlf", "bom", "rewritten"), READ_EQUAL),
    **dict.fromkeys(("not-utf8", "empty", "truncated", "junk", "deep", "non-finite", "lone-surrogate", "huge-int",
                     "long-int", "int64-edge", "hazard", "no-header", "huge-cell", "field-count", "drop-column",
                     "metadata-lost"), REFUSED),
    **dict.fromkeys(("bytes", "wrong-type", "missing-field", "duplicate-key", "quirk", "cast-column", "null-value"),
                    CHECKED),
}
"""The expectation of each class that calls for the same in every reader of its kinds."""

BY_KIND: dict[tuple[str, str], str] = {
    ("jsonl", "cr-only"): REFUSED,  # one line of several JSON objects
    ("tsv", "cr-only"): REFUSED,  # one line of many fields
    ("json", "cr-only"): READ_EQUAL,  # a carriage return is JSON white space
    ("yaml", "cr-only"): READ_EQUAL,  # and a YAML line break
    ("csv", "cr-only"): READ_EQUAL,  # and a CSV row's end
    ("csv", "repeated-record"): REFUSED,  # every sheet refuses an item or question listed twice
    ("parquet", "repeated-record"): REFUSED,  # a repeated id
    ("parquet", "rule-violation"): REFUSED,  # an answer out of range: our own format refuses it
}
"""Expectations that follow from the file kind."""


def expectation(kind: str, cls: str, stated: dict[str, str]) -> str:
    """What class `cls` calls for in a reader of `kind` that states `stated` for its own classes."""
    found = stated.get(cls) or BY_KIND.get((kind, cls)) or DEFAULTS.get(cls)
    if found is None:
        raise KeyError(f"no expectation for mutation class {cls!r} of a {kind} file: state one in seeds.READERS")
    return found
