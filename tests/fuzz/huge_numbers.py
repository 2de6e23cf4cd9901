"""Every numeric field of a reader's seed, given one at a time integers Python reads only in part or not at all.

For each number of the seed (a JSON or YAML value, a CSV cell holding an integer, a value of a Parquet row's
metadata JSON): an integer of 5,000 digits (past Python's limit on converting text to int, 4,300), one of 4,300
digits (Python reads it; past 64 bits) and 2**63 (the first integer past 64 bits). Each file must be refused by
an InputError naming it, never a ValueError or OverflowError from deep inside a reader.
"""

from __future__ import annotations

from dataclasses import replace

from tests.fuzz import json_mutations, parquet_mutations, sheet_mutations
from tests.fuzz.mutations import Mutated
from tests.fuzz.seeds import Reader

LITERALS = {"huge-int": "9" * 5000, "long-int": "9" * 4300, "int64-edge": str(2**63)}
"""Class name -> the integer written in place of a number."""


def huge_number_files(reader: Reader) -> list[Mutated]:
    """One file per (numeric field of the reader's seed, literal of LITERALS)."""
    seed = reader.seed()
    if reader.kind == "parquet":
        made = [lambda literal, at=at: parquet_mutations.with_metadata_value(seed, *at, literal)
                for at in parquet_mutations.metadata_keys(seed, json_mutations.is_number)]
    elif reader.kind == "csv":
        made = [lambda literal, at=at: sheet_mutations.with_cell(seed, *at, literal)
                for at in sheet_mutations.integer_cells(seed)]
    elif reader.kind == "tsv":
        made = []
    else:
        docs = json_mutations.parse(seed, reader.kind)
        made = [lambda literal, path=path: json_mutations.with_literal(docs, reader.kind, path, literal)
                for path in json_mutations.numbers(docs)]
    return [replace(make(literal), cls=cls) for make in made for cls, literal in LITERALS.items()]
