"""Overfitting onset on curves whose onset is known by construction."""

from __future__ import annotations

import pytest

from crossknow.dynamics import ONSET_DEFINITION, correct_loss_by_condition, onsets_by_condition, overfitting_onset
from crossknow.errors import CrossknowError
from tests.dynamics.traces import Item, build_trace, flat

STEPS = [0, 100, 200, 300, 400, 500]


def test_u_shaped_curve_has_its_onset_at_the_minimum():
    assert overfitting_onset(STEPS, [3.0, 2.0, 1.5, 1.8, 2.4, 3.0]) == 200


def test_first_of_tied_minima():
    assert overfitting_onset(STEPS, [3.0, 1.5, 1.5, 1.8, 2.4, 3.0]) == 100


def test_falling_or_flat_curve_has_no_onset():
    assert overfitting_onset(STEPS, [3.0, 2.5, 2.0, 1.5, 1.2, 1.0]) is None
    assert overfitting_onset(STEPS, [2.0] * 6) is None


def test_rise_within_tol_is_no_rise():
    curve = [3.0, 2.0, 1.0, 1.005, 1.008, 1.009]
    assert overfitting_onset(STEPS, curve, tol=0.01) is None
    assert overfitting_onset(STEPS, curve, tol=0.001) == 200


def test_rise_must_last_through_the_end():
    # rises, then comes back to the minimum at the end: not sustained
    assert overfitting_onset(STEPS, [3.0, 1.0, 2.0, 2.5, 2.0, 1.0]) is None
    # a new minimum later: the onset is at the global minimum
    assert overfitting_onset(STEPS, [3.0, 1.0, 2.0, 0.5, 1.0, 1.5]) == 300


def test_patience_counts_the_risen_points_at_the_end():
    curve = [3.0, 2.0, 1.5, 1.2, 1.0, 1.4]  # only the last point has risen
    assert overfitting_onset(STEPS, curve, patience=2) is None
    assert overfitting_onset(STEPS, curve, patience=1) == 400
    assert overfitting_onset(STEPS, [3.0, 1.0, 2.0, 2.0, 2.0, 2.0], patience=4) == 100
    assert overfitting_onset(STEPS, [3.0, 1.0, 2.0, 2.0, 2.0, 2.0], patience=5) is None


def test_unsorted_steps_are_sorted():
    assert overfitting_onset([300, 0, 200, 100], [2.0, 3.0, 1.5, 1.0]) == 100


def test_short_curves():
    assert overfitting_onset([0], [1.0]) is None
    assert overfitting_onset([0, 1], [1.0, 2.0]) is None
    assert overfitting_onset([0, 1], [1.0, 2.0], patience=1) == 0


@pytest.mark.parametrize(
    ("steps", "values"),
    [([0, 1, 1], [1.0, 2.0, 3.0]), ([0, 1], [1.0, float("nan")]), ([], []), ([0, 1], [1.0])],
    ids=["repeated-step", "nan", "empty", "lengths-differ"],
)
def test_bad_curves_are_clear_errors(steps, values):
    with pytest.raises(CrossknowError):
        overfitting_onset(steps, values)


def test_bad_parameters():
    with pytest.raises(ValueError):
        overfitting_onset([0, 1], [1.0, 2.0], patience=0)
    with pytest.raises(ValueError):
        overfitting_onset([0, 1], [1.0, 2.0], tol=-1)


def test_onsets_of_condition_curves():
    trace = build_trace(STEPS, [
        Item("m", "memorisation", 0, [[3.0, 2.0, 1.5, 1.8, 2.4, 3.0], flat(5.0, 6)]),
        Item("i", "interlingual", 0, [[3.0, 2.5, 2.0, 1.5, 1.2, 1.0], flat(5.0, 6)]),
    ])
    assert onsets_by_condition(correct_loss_by_condition(trace)) == {"memorisation": 200, "interlingual": None}


def test_definition_states_the_defaults():
    assert "tol = 0.01" in ONSET_DEFINITION and "patience = 2" in ONSET_DEFINITION
