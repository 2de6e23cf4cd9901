"""Accuracy, correct-option loss and loss ratio per condition, on traces with known answers."""

from __future__ import annotations

import pytest

from crossknow.dynamics import (
    accuracy_by_condition,
    chance_by_condition,
    correct_loss_by_condition,
    item_loss_ratios,
    loss_ratio_by_condition,
)
from tests.dynamics.traces import Item, build_trace, flat

STEPS = [0, 50, 100]


def trace_three_conditions():
    return build_trace(STEPS, [
        # memorisation: wrong, right, right | right, right, right
        Item("m1", "memorisation", 0, [[3.0, 1.0, 0.5], [2.0, 2.0, 2.0], [2.5, 2.5, 2.5], [4.0, 4.0, 4.0]]),
        Item("m2", "memorisation", 1, [[2.0, 2.0, 2.0], [1.0, 1.0, 1.0], [3.0, 3.0, 3.0], [3.0, 3.0, 3.0]]),
        # intralingual: wrong throughout
        Item("q1", "intralingual", 2, [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0], [3.0, 3.0, 3.0], [4.0, 4.0, 4.0]]),
        # a generic condition name, three options
        Item("x1", "interlingual-cloze", 0, [[1.0, 2.0, 1.0], [2.0, 1.0, 2.0], [3.0, 3.0, 3.0]]),
    ])


def test_accuracy_per_condition_and_step():
    table = accuracy_by_condition(trace_three_conditions()).set_index(["step", "condition"])
    assert list(table.columns) == ["n_items", "n_correct", "accuracy"]
    expected = {
        (0, "memorisation"): 0.5, (50, "memorisation"): 1.0, (100, "memorisation"): 1.0,
        (0, "intralingual"): 0.0, (50, "intralingual"): 0.0, (100, "intralingual"): 0.0,
        (0, "interlingual-cloze"): 1.0, (50, "interlingual-cloze"): 0.0, (100, "interlingual-cloze"): 1.0,
    }
    assert table["accuracy"].to_dict() == expected
    assert table.loc[(0, "memorisation"), "n_items"] == 2 and table.loc[(0, "memorisation"), "n_correct"] == 1


def test_chance_is_mean_of_one_over_k():
    assert chance_by_condition(trace_three_conditions()) == {
        "memorisation": 0.25, "intralingual": 0.25, "interlingual-cloze": pytest.approx(1 / 3),
    }


def test_mean_correct_loss():
    table = correct_loss_by_condition(trace_three_conditions()).set_index(["step", "condition"])
    assert table.loc[(0, "memorisation"), "mean_correct_loss"] == pytest.approx((3.0 + 1.0) / 2)
    assert table.loc[(100, "memorisation"), "mean_correct_loss"] == pytest.approx((0.5 + 1.0) / 2)
    assert table.loc[(50, "intralingual"), "mean_correct_loss"] == 3.0
    assert table.loc[(50, "interlingual-cloze"), "n_items"] == 1


@pytest.mark.parametrize("k", [2, 4, 5])
def test_loss_ratio_is_one_over_k_when_all_losses_are_equal(k):
    trace = build_trace(STEPS, [
        Item("a", "memorisation", 0, [flat(2.0, 3)] * k),
        Item("b", "memorisation", k - 1, [flat(7.5, 3)] * k),
    ])
    table = loss_ratio_by_condition(trace)
    assert table["loss_ratio"].tolist() == pytest.approx([1 / k] * 3)
    assert table["mean_item_ratio"].tolist() == pytest.approx([1 / k] * 3)
    assert table["chance"].tolist() == pytest.approx([1 / k] * 3)


def test_loss_ratio_is_a_ratio_of_sums():
    # item a: correct 1, all 1+3 = 4 -> 0.25; item b: correct 6, all 6+2 = 8 -> 0.75
    trace = build_trace([0, 1], [
        Item("a", "memorisation", 0, [[1.0, 1.0], [3.0, 3.0]]),
        Item("b", "memorisation", 0, [[6.0, 6.0], [2.0, 2.0]]),
    ])
    table = loss_ratio_by_condition(trace)
    assert table["loss_ratio"].tolist() == pytest.approx([7 / 12, 7 / 12])
    assert table["mean_item_ratio"].tolist() == pytest.approx([0.5, 0.5])
    per_item = item_loss_ratios(trace).set_index(["step", "item_id"])["ratio"]
    assert per_item[(0, "a")] == pytest.approx(0.25) and per_item[(1, "b")] == pytest.approx(0.75)


def test_loss_ratio_chance_with_mixed_option_counts():
    trace = build_trace([0, 1], [
        Item("a", "memorisation", 0, [flat(1.0, 2)] * 2),
        Item("b", "memorisation", 0, [flat(1.0, 2)] * 4),
    ])
    table = loss_ratio_by_condition(trace)
    assert table["chance"].tolist() == pytest.approx([2 / 6, 2 / 6])
    assert table["loss_ratio"].tolist() == pytest.approx([2 / 6, 2 / 6])


def test_loss_ratio_by_set_and_condition():
    trace = build_trace([0, 1], [
        Item("a", "memorisation", 0, [[1.0, 1.0], [3.0, 3.0]], set="s1"),
        Item("b", "memorisation", 0, [[6.0, 6.0], [2.0, 2.0]], set="s2"),
    ])
    table = loss_ratio_by_condition(trace, by=("set", "condition")).set_index(["step", "set"])
    assert table.loc[(0, "s1"), "loss_ratio"] == pytest.approx(0.25)
    assert table.loc[(0, "s2"), "loss_ratio"] == pytest.approx(0.75)
