"""The demos' account of their seconds: phases in a fixed order whatever order they ran in, a part a run measured
moved out of the phase that held it (never below zero), and the rest of the wall time shown as 'other'."""

from __future__ import annotations

import re

from crossknow.cli import phases as phases_module
from crossknow.cli.phases import Phases


def test_the_line_names_every_phase_in_order_and_the_rest_as_other(monkeypatch):
    clock = iter([100.0, 101.0, 131.0, 131.0, 141.0, 150.0])
    monkeypatch.setattr(phases_module.time, "monotonic", lambda: next(clock))
    phases = Phases()  # starts at 100
    with phases("train"):  # 101 -> 131: 30 s, of which 8 s of loading by the run's own count
        pass
    phases.move("train", "load", 8.0)
    with phases("report"):  # 131 -> 141
        pass
    assert phases.seconds == {"train": 22.0, "load": 8.0, "report": 10.0}
    assert phases.line() == "50 s (load 8, train 22, report 10, other 10)"  # at 150: 1 s before train, 9 s after


def test_a_part_larger_than_its_phase_moves_only_the_phase():
    phases = Phases()
    phases.add("score+check", 5.0)
    phases.move("score+check", "generate", 7.5)
    assert phases.seconds == {"score+check": 0.0, "generate": 5.0}
    assert re.fullmatch(r"\d+ s \(generate 5, score\+check 0, other \d+\)|\d+ s \(generate 5, score\+check 0\)",
                        phases.line())
