"""Every reader entry point, fed malformed variants of a valid file, returns or refuses by name, in time.

For each reader of `seeds.READERS`, Hypothesis generates files from the reader's valid seed (`mutations`) and
calls the reader on each: it must either return or raise a CrossknowError whose message names the file, within
TIME_LIMIT seconds; anything else (a TypeError, a RecursionError, a hang) fails with the input that caused it.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from crossknow.errors import CrossknowError  # noqa: E402
from tests.fuzz.conftest import EXAMPLES  # noqa: E402
from tests.fuzz.mutations import mutation  # noqa: E402
from tests.fuzz.seeds import READERS, Reader  # noqa: E402
from tests.fuzz.tally import note  # noqa: E402

TIME_LIMIT = 5.0
"""The most seconds one call may take on a malformed file of this suite's size (all are under 300 KB)."""

FUZZ = settings(
    max_examples=EXAMPLES, deadline=None, database=None, derandomize=EXAMPLES <= 20,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


def check(reader: Reader, folder: Path, data: bytes) -> None:
    """Write `data` as the reader's file and read it: it returns, or refuses naming the file, in time."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    path = folder / reader.file_name
    path.write_bytes(data)
    start = time.perf_counter()
    try:
        reader.read(path)
        outcome = "returned"
    except CrossknowError as error:
        assert str(path) in str(error), f"{reader.name}: the error does not name the file: {error}"
        outcome = "refused"
    seconds = time.perf_counter() - start
    note(reader.name, outcome, seconds)
    assert seconds < TIME_LIMIT, f"{reader.name}: {seconds:.1f} s on a {len(data):,}-byte file"


@pytest.mark.parametrize("reader", READERS, ids=[reader.name for reader in READERS])
def test_a_malformed_file_is_read_or_refused_by_name(reader: Reader) -> None:
    seed = reader.seed()
    with tempfile.TemporaryDirectory(prefix="crossknow-fuzz-") as directory:
        folder = Path(directory) / reader.name
        check(reader, folder, seed)  # the seed itself is read
        assert _returned(reader.name), f"{reader.name}: the valid seed was refused"

        @FUZZ
        @given(data=st.data())
        def fuzz(data: st.DataObject) -> None:
            check(reader, folder, data.draw(mutation(reader.kind, seed), label="file"))

        fuzz()


def _returned(name: str) -> bool:
    from tests.fuzz.tally import COUNTS

    return COUNTS[name]["returned"] >= 1
