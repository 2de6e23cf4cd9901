"""Counts of the fuzz suite, printed at the end of the run: per reader and per mutation class, the inputs
generated, how each call ended (returned, refused) and whether the class's expectation was met."""

from __future__ import annotations

from collections import Counter, defaultdict

COUNTS: defaultdict[str, Counter[str]] = defaultdict(Counter)
"""reader name -> Counter of 'returned' and 'refused' (a CrossknowError naming the file)."""
SLOWEST: dict[str, float] = {}
"""reader name -> the longest call, seconds."""
CLASSES: defaultdict[str, Counter[str]] = defaultdict(Counter)
"""mutation class -> Counter of 'returned', 'refused', 'met' and 'missed'."""
HELD_TO: defaultdict[str, Counter[str]] = defaultdict(Counter)
"""mutation class -> Counter of the expectations its inputs were held to."""
CLI: defaultdict[str, Counter[str]] = defaultdict(Counter)
"""command -> Counter of 'inputs' and 'met' (one error line naming the file, exit 2, nothing half-written)."""


def note(reader: str, cls: str, expected: str, outcome: str, met: bool, seconds: float) -> None:
    """Count one call of `reader` on an input of class `cls`, held to `expected`, that ended in `outcome`."""
    COUNTS[reader][outcome] += 1
    SLOWEST[reader] = max(SLOWEST.get(reader, 0.0), seconds)
    CLASSES[cls].update((outcome, "met" if met else "missed"))
    HELD_TO[cls][expected] += 1


def note_cli(command: str, met: bool) -> None:
    """Count one malformed input given to `command`."""
    CLI[command].update(("inputs", "met") if met else ("inputs",))
