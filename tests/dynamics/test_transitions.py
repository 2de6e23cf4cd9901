"""Instance transitions between two checkpoints, counted on a constructed 2 x 2 case."""

from __future__ import annotations

import pytest

from crossknow.dynamics import TRANSITIONS, TraceTableError, item_transitions, transition_counts
from tests.dynamics.traces import Item, build_trace, flat

RIGHT, WRONG = [1.0, 2.0], [2.0, 1.0]  # answer 0: loss of option 0 and option 1 at one step


def item(item_id: str, condition: str, first: list[float], last: list[float], middle: list[float] | None = None):
    """An item with answer 0 whose two options have the given losses at steps 0, (5,) 10."""
    points = [first, middle, last] if middle is not None else [first, last]
    return Item(item_id, condition, 0, [[p[0] for p in points], [p[1] for p in points]])


def two_by_two():
    """One item of each transition in condition A; in B, two acquired and one forgotten."""
    return build_trace([0, 10], [
        item("rr", "A", RIGHT, RIGHT), item("wr", "A", WRONG, RIGHT),
        item("rw", "A", RIGHT, WRONG), item("ww", "A", WRONG, WRONG),
        item("b1", "B", WRONG, RIGHT), item("b2", "B", WRONG, RIGHT), item("b3", "B", RIGHT, WRONG),
    ])


def test_each_item_gets_its_transition():
    table = item_transitions(two_by_two()).set_index("item_id")["transition"].to_dict()
    assert table == {"rr": "retained", "wr": "acquired", "rw": "forgotten", "ww": "unacquired",
                     "b1": "acquired", "b2": "acquired", "b3": "forgotten"}


def test_counts_per_condition():
    counts = transition_counts(two_by_two()).set_index("condition")
    assert list(counts.columns) == ["n_items", *TRANSITIONS]
    assert counts.loc["A"].to_dict() == {"n_items": 4, "retained": 1, "acquired": 1, "forgotten": 1, "unacquired": 1}
    assert counts.loc["B"].to_dict() == {"n_items": 3, "retained": 0, "acquired": 2, "forgotten": 1, "unacquired": 0}


def test_given_steps_choose_the_comparison():
    trace = build_trace([0, 5, 10], [item("x", "A", WRONG, WRONG, middle=RIGHT)])
    assert item_transitions(trace)["transition"].tolist() == ["unacquired"]
    assert item_transitions(trace, 0, 5)["transition"].tolist() == ["acquired"]
    assert item_transitions(trace, 5, 10)["transition"].tolist() == ["forgotten"]
    assert item_transitions(trace, first_step=5)["transition"].tolist() == ["forgotten"]


def test_a_tie_counts_for_the_lower_index():
    # step 10 ties the two options: the lower index (0) is predicted
    trace = build_trace([0, 10], [Item("t0", "A", 0, [[2.0, 2.0], [1.0, 2.0]]),
                                  Item("t1", "A", 1, [[2.0, 2.0], [1.0, 2.0]])])
    assert item_transitions(trace)["transition"].tolist() == ["acquired", "forgotten"]


def test_one_checkpoint_is_a_clear_error():
    trace = build_trace([0], [Item("x", "A", 0, [flat(1.0, 1), flat(2.0, 1)])])
    with pytest.raises(TraceTableError, match="at least two"):
        transition_counts(trace)


@pytest.mark.parametrize(("first", "last", "message"), [(10, 0, "must come before"), (0, 7, "not a checkpoint"),
                                                        (10, 10, "must come before")])
def test_bad_steps_are_clear_errors(first, last, message):
    with pytest.raises(TraceTableError, match=message):
        transition_counts(two_by_two(), first, last)
