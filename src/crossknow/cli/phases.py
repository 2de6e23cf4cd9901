"""Where a command's seconds went: phases timed as they run (`with phases("train"):`), parts of a phase that a run
counted itself moved to their own name (`phases.move("train", "load", seconds)`), and one line that names them all."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

ORDER = ("load", "train", "generate", "score", "report")
"""The order in which the line names these phases, whenever they ran; any other follows them."""


class Phases:
    """Wall-clock seconds per phase; see the module docstring."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._started = time.monotonic()

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        """Add the seconds of the block to phase `name`."""
        begun = time.monotonic()
        try:
            yield
        finally:
            self.add(name, time.monotonic() - begun)

    def add(self, name: str, seconds: float) -> None:
        """Add `seconds` to phase `name`."""
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def move(self, source: str, name: str, seconds: float) -> None:
        """Count `seconds` of phase `source` as phase `name` instead (a part the run measured itself)."""
        seconds = min(seconds, self.seconds.get(source, 0.0))
        self.add(source, -seconds)
        self.add(name, seconds)

    def total(self) -> float:
        """Seconds since the phases began."""
        return time.monotonic() - self._started

    def line(self) -> str:
        """'170 s (load 9, train 96, score 61, report 3)': the seconds since the start, and those of every phase;
        the rest, work that no phase named, as 'other'."""
        total = self.total()
        parts = {name: self.seconds[name] for name in sorted(self.seconds, key=_place)}
        rest = total - sum(parts.values())
        if rest >= 0.5:
            parts["other"] = rest
        return f"{total:.0f} s (" + ", ".join(f"{name} {value:.0f}" for name, value in parts.items()) + ")"


def _place(name: str) -> int:
    return ORDER.index(name) if name in ORDER else len(ORDER)
