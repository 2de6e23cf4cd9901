"""Every reader entry point, fed each mutation class of its file, does what the class calls for, in time.

For each reader of `seeds.READERS` and each mutation class of its file kind, Hypothesis generates inputs from
the reader's valid seed and the reader is held to the class's expectation (`expectations`): refused by an
InputError naming the file, read back equal to the seed, read with the changed record reported invalid, or
either refused or read into records that pass `results.revalidate` and account for every record of the file.
A call that raises anything else (a ValueError, a RecursionError) or takes over TIME_LIMIT seconds fails with
the input that caused it. Every numeric field of every seed is also given, one at a time, integers past Python's
digit limit and past 64 bits: each must be refused by name.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("hypothesis")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from crossknow.errors import CrossknowError, InputError  # noqa: E402
from tests.fuzz.conftest import fuzz_settings, reader_examples  # noqa: E402
from tests.fuzz.expectations import CLASSES, DROPPED, READ_EQUAL, REFUSED, expectation  # noqa: E402
from tests.fuzz.huge_numbers import huge_number_files  # noqa: E402
from tests.fuzz.mutations import Mutated  # noqa: E402
from tests.fuzz.results import accounted, invalid_records, normal, records_in, revalidate  # noqa: E402
from tests.fuzz.seeds import READERS, Reader  # noqa: E402
from tests.fuzz.tally import note  # noqa: E402

TIME_LIMIT = 5.0
"""The most seconds one call may take on a malformed file of this suite's size (all are under 300 KB)."""

CASES = [(reader, cls) for reader in READERS for cls, mutation in CLASSES[reader.kind].items()
         if mutation.applies(reader.seed(), reader.breaks_rule)]
"""(reader, mutation class) for every class that applies to the reader's seed."""
_SEED_RESULTS: dict[str, Any] = {}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def call(reader: Reader, folder: Path, data: bytes) -> tuple[Path, Any, CrossknowError | None, float]:
    """Write `data` as the reader's only file in its folder and read it: (path, result, error, seconds)."""
    here = folder / reader.name
    here.mkdir(exist_ok=True)
    for old in here.iterdir():
        old.unlink()
    path = here / reader.file_name
    path.write_bytes(data)
    start = time.perf_counter()
    try:
        return path, reader.read(path), None, time.perf_counter() - start
    except CrossknowError as error:
        return path, None, error, time.perf_counter() - start


def seed_result(reader: Reader, folder: Path) -> Any:
    """What the reader returns for its seed (read once per run)."""
    if reader.name not in _SEED_RESULTS:
        _, result, error, _ = call(reader, folder, reader.seed())
        assert error is None, f"{reader.name}: the valid seed was refused: {error}"
        _SEED_RESULTS[reader.name] = result
    return _SEED_RESULTS[reader.name]


def meets(reader: Reader, expected: str, mutated: Mutated, folder: Path) -> None:
    """Read the mutated file and assert that the outcome is the one `expected` names."""
    seed = seed_result(reader, folder)
    path, result, error, seconds = call(reader, folder, mutated.data)
    met = False
    try:
        if error is not None:
            assert isinstance(error, InputError) and error.path == str(path), f"no InputError naming the file: {error}"
            assert expected != READ_EQUAL and expected != DROPPED, f"refused, expected {expected}: {error}"
        else:
            assert expected != REFUSED, "returned, expected an InputError naming the file"
            check_returned(reader, result, mutated, seed, expected)
        assert seconds < TIME_LIMIT, f"{seconds:.1f} s on a {len(mutated.data):,}-byte file"
        met = True
    finally:
        note(reader.name, mutated.cls, expected, "refused" if error else "returned", met, seconds)


def check_returned(reader: Reader, result: Any, mutated: Mutated, seed: Any, expected: str) -> None:
    """What a returned result must be: equal to the seed's (READ_EQUAL), or records that validate again and
    account for every record of the file, with the changed record among the invalid ones (DROPPED)."""
    if expected == READ_EQUAL:
        assert normal(result) == normal(seed), "read back different from the seed"
        return
    revalidate(result)
    if reader.per_record is not None:
        low, high = reader.per_record
        units = records_in(reader.kind, mutated.data)
        assert low * units <= accounted(result) <= high * units, f"{accounted(result)} results of {units} records"
    if reader.holds is not None:
        reader.holds(result, mutated.data)
    if expected == DROPPED:
        invalid = invalid_records(result)
        assert len(invalid) > len(invalid_records(seed)), "no record reported invalid"
        assert mutated.record is None or any(record.line == mutated.record for record in invalid), invalid


@pytest.mark.parametrize(("reader", "cls"), CASES, ids=[f"{reader.name}:{cls}" for reader, cls in CASES])
@fuzz_settings(max_examples=reader_examples(len(CASES) / len(READERS)))
@given(data=st.data())
def test_a_mutated_file_meets_its_class_expectation(reader: Reader, cls: str, folder: Path, data: st.DataObject):
    mutated = data.draw(CLASSES[reader.kind][cls].strategy(reader.seed(), reader.breaks_rule), label="file")
    meets(reader, expectation(reader.kind, cls, reader.expect), mutated, folder)


NUMERIC = [reader for reader in READERS if huge_number_files(reader)]
"""The readers whose seeds hold a number (their readers' numeric fields)."""


@pytest.mark.parametrize("reader", NUMERIC, ids=[reader.name for reader in NUMERIC])
def test_every_numeric_field_refuses_integers_past_the_limits(reader: Reader, folder: Path):
    for mutated in huge_number_files(reader):
        meets(reader, REFUSED, mutated, folder)
