"""Counts of the fuzz suite: per reader, the inputs generated and how each call ended."""

from __future__ import annotations

from collections import Counter, defaultdict

COUNTS: defaultdict[str, Counter[str]] = defaultdict(Counter)
"""reader name -> Counter of 'returned' and 'refused' (a CrossknowError naming the file)."""
SLOWEST: dict[str, float] = {}
"""reader name -> the longest call, seconds."""


def note(reader: str, outcome: str, seconds: float) -> None:
    """Count one call of `reader` that ended in `outcome`."""
    COUNTS[reader][outcome] += 1
    SLOWEST[reader] = max(SLOWEST.get(reader, 0.0), seconds)
