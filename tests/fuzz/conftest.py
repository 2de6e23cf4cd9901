"""The fuzz suite's settings, its kept regressions and its report.

Every test here is marked `fuzz`. CROSSKNOW_FUZZ_EXAMPLES (default 20: the normal test run) sets the number of
inputs per reader (`reader_examples`) and per command (`cli_examples`); `make fuzz` raises it so that the suite
generates at least 10,000 reader inputs and 200 command-line inputs.

Kept regressions: in `make fuzz` mode Hypothesis saves each failing input it finds in tests/fuzz/regressions/
(commit the folder), and drops one that passes again; the normal run replays the folder read-only before it
generates, so that each kept failing case reruns in CI. An entry is keyed by the test's node id and its
function's source (decorators aside): the test functions stay short calls of the checks, which may change freely.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, seed, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ReadOnlyDatabase

from tests.fuzz.tally import CLASSES, CLI, COUNTS, HELD_TO, SLOWEST

NORMAL_EXAMPLES = 20
EXAMPLES = int(os.environ.get("CROSSKNOW_FUZZ_EXAMPLES", str(NORMAL_EXAMPLES)))
"""Inputs asked per reader, spread over its mutation classes (`reader_examples`)."""
FUZZ_MODE = EXAMPLES > NORMAL_EXAMPLES
"""`make fuzz`: inputs drawn anew each run, failures saved in REGRESSIONS."""
REGRESSIONS = Path(__file__).parent / "regressions"
"""The kept failing inputs (Hypothesis's example database)."""
DATABASE = DirectoryBasedExampleDatabase(REGRESSIONS)


def reader_examples(classes: float) -> int:
    """Inputs per mutation class of a reader, readers having `classes` mutation classes on average (at least 2;
    a class of few possible inputs, such as a byte-order mark added, stops when it has given them all)."""
    return max(2, math.ceil(EXAMPLES / classes))


def cli_examples() -> int:
    """Malformed inputs per command: 3 in the normal run, EXAMPLES / 30 in `make fuzz`."""
    return max(3, EXAMPLES // 30)


def fuzz_settings(max_examples: int) -> Callable:
    """Hypothesis settings of a fuzz test: in `make fuzz`, random inputs and REGRESSIONS written; in the normal
    run, REGRESSIONS replayed read-only, then the same inputs every run (seed 0). Hypothesis's own @seed turns
    the database off, so the settings are applied after it, which keeps both. The command-line fuzz uses pytest's
    capsys and monkeypatch in every example (each run resets what it uses), hence function-scoped fixtures."""
    database = DATABASE if FUZZ_MODE else ReadOnlyDatabase(DATABASE)
    configured = settings(max_examples=max_examples, deadline=None, database=database, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                 HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])
    return lambda test: configured(test if FUZZ_MODE else seed(0)(test))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of this folder `fuzz`."""
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(pytest.mark.fuzz)


def pytest_terminal_summary(terminalreporter) -> None:
    """Per reader: inputs, calls returned and refused, the slowest call; per mutation class: the same, the
    expectations it was held to and how many met them; per command: malformed inputs and how many met theirs."""
    write = terminalreporter.write_line
    if COUNTS:
        terminalreporter.section(f"fuzz: {EXAMPLES} inputs asked per reader")
        write(f"{'reader':<26}{'inputs':>9}{'returned':>10}{'refused':>9}{'slowest s':>11}")
        for name in sorted(COUNTS):
            counts = COUNTS[name]
            total = counts["returned"] + counts["refused"]
            write(f"{name:<26}{total:>9}{counts['returned']:>10}{counts['refused']:>9}{SLOWEST[name]:>11.3f}")
        returned, refused = (sum(c[key] for c in COUNTS.values()) for key in ("returned", "refused"))
        write(f"{'all':<26}{returned + refused:>9}{returned:>10}{refused:>9}")
        write("")
        write(f"{'mutation class':<17}{'inputs':>8}{'returned':>10}{'refused':>9}{'met':>8}  held to")
        for cls in sorted(CLASSES):
            counts = CLASSES[cls]
            held = ", ".join(f"{name} {n}" for name, n in sorted(HELD_TO[cls].items()))
            total = counts["met"] + counts["missed"]
            write(f"{cls:<17}{total:>8}{counts['returned']:>10}{counts['refused']:>9}{counts['met']:>8}  {held}")
    if CLI:
        terminalreporter.section("fuzz: malformed inputs per command")
        for command in sorted(CLI):
            write(f"{command:<18}{CLI[command]['inputs']:>6} inputs{CLI[command]['met']:>6} met")
        inputs, met = (sum(counts[key] for counts in CLI.values()) for key in ("inputs", "met"))
        write(f"{'all':<18}{inputs:>6} inputs{met:>6} met")
