"""The fuzz suite's settings and its report.

Every test here is marked `fuzz`. The example count per reader is CROSSKNOW_FUZZ_EXAMPLES (default 20: the
normal test run); `make fuzz` raises it so that the suite generates at least 10,000 inputs, and the counts per
reader (inputs generated, returned, refused) are printed at the end of the run.
"""

from __future__ import annotations

import os

import pytest

from tests.fuzz.tally import COUNTS, SLOWEST

EXAMPLES = int(os.environ.get("CROSSKNOW_FUZZ_EXAMPLES", "20"))
"""Generated inputs per reader."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of this folder `fuzz`."""
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(pytest.mark.fuzz)


def pytest_terminal_summary(terminalreporter) -> None:
    """Per reader: inputs generated, calls that returned, calls refused with a CrossknowError naming the file."""
    if not COUNTS:
        return
    write = terminalreporter.write_line
    terminalreporter.section(f"fuzz: {EXAMPLES} examples asked per reader")
    write(f"{'reader':<26}{'generated':>10}{'returned':>10}{'refused':>10}{'slowest s':>11}")
    for name in sorted(COUNTS):
        counts = COUNTS[name]
        total = counts["returned"] + counts["refused"]
        write(f"{name:<26}{total:>10}{counts['returned']:>10}{counts['refused']:>10}{SLOWEST[name]:>11.3f}")
    returned = sum(c["returned"] for c in COUNTS.values())
    refused = sum(c["refused"] for c in COUNTS.values())
    write(f"{'all':<26}{returned + refused:>10}{returned:>10}{refused:>10}")
