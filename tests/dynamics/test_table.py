"""Validation of the trace table and the per-item states every analysis starts from."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crossknow.dynamics import TraceTableError, item_states, validate_trace
from crossknow.errors import CrossknowError
from tests.dynamics.traces import Item, build_trace

STEPS = [0, 10]


def two_items():
    return build_trace(STEPS, [
        Item("a", "memorisation", 0, [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]),
        Item("b", "interlingual", 2, [[1.0, 3.0], [2.0, 2.0], [3.0, 1.0]]),
    ])


def test_item_states_prediction_is_lowest_loss_and_ties_go_to_lower_index():
    trace = build_trace(STEPS, [
        Item("tie-correct-first", "memorisation", 0, [[2.0, 2.0], [2.0, 2.0], [3.0, 3.0]]),
        Item("tie-correct-second", "memorisation", 1, [[2.0, 2.0], [2.0, 2.0], [3.0, 3.0]]),
    ])
    states = item_states(trace).set_index(["step", "item_id"])
    assert states.loc[(0, "tie-correct-first"), "predicted_index"] == 0
    assert bool(states.loc[(0, "tie-correct-first"), "correct"]) is True
    assert states.loc[(0, "tie-correct-second"), "predicted_index"] == 0
    assert bool(states.loc[(0, "tie-correct-second"), "correct"]) is False


def test_item_states_columns():
    states = item_states(two_items()).set_index(["step", "item_id"])
    row = states.loc[(10, "b")]
    assert row["n_options"] == 3 and row["answer_index"] == 2
    assert row["correct_loss"] == 1.0 and row["total_loss"] == 6.0 and row["best_distractor_loss"] == 2.0
    assert row["predicted_index"] == 2 and bool(row["correct"])
    assert not bool(states.loc[(0, "b"), "correct"])


def test_item_states_ignore_row_order():
    trace = two_items()
    shuffled = trace.sample(frac=1.0, random_state=3)
    assert item_states(shuffled).equals(item_states(trace))


def test_same_item_id_in_two_sets_are_two_items():
    trace = build_trace(STEPS, [
        Item("7", "memorisation", 0, [[1.0, 1.0], [2.0, 2.0]], set="cloze"),
        Item("7", "intralingual", 1, [[1.0, 1.0], [2.0, 2.0]], set="question"),
    ])
    states = item_states(trace)
    assert len(states) == 4
    assert states.groupby("condition")["correct"].sum().to_dict() == {"intralingual": 0, "memorisation": 2}


def test_error_is_a_crossknow_error():
    assert issubclass(TraceTableError, CrossknowError)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda t: t.drop(columns=["loss"]), "lacks column"),
        (lambda t: t.iloc[0:0], "empty"),
        (lambda t: t.assign(loss=np.where(t.index == 3, np.nan, t["loss"])), "not a finite number"),
        (lambda t: t.drop(index=t.index[(t["step"] == 10) & (t["item_id"] == "b")]), "missing"),
        (lambda t: t.assign(is_answer=t["is_answer"] | ((t["item_id"] == "a") & (t["option_index"] == 1))),
         "exactly one option"),
        (lambda t: t.assign(is_answer=False), "exactly one option"),
        (lambda t: t.drop(index=t.index[(t["step"] == 10) & (t["item_id"] == "a") & (t["option_index"] == 2)]),
         "options or answer differ"),
        (lambda t: t.assign(checkpoint=np.where(t.index == 0, "other", t["checkpoint"])), "more than one checkpoint"),
        (lambda t: t.assign(condition=np.where((t["item_id"] == "a") & (t["step"] == 10), "other", t["condition"])),
         "more than one condition"),
    ],
    ids=["no-loss-column", "empty", "nan-loss", "missing-item", "two-answers", "no-answer", "options-change",
         "two-checkpoints-one-step", "condition-changes"],
)
def test_malformed_trace_is_a_clear_error(mutate, message):
    with pytest.raises(TraceTableError, match=message):
        validate_trace(mutate(two_items()))


def test_missing_item_error_names_the_step_and_the_item():
    trace = two_items()
    trace = trace.drop(index=trace.index[(trace["step"] == 10) & (trace["item_id"] == "b")])
    with pytest.raises(TraceTableError) as error:
        item_states(trace)
    assert "step 10: 1" in str(error.value) and "'b'" in str(error.value)


def test_duplicated_rows_are_an_error():
    trace = two_items()
    with pytest.raises(TraceTableError, match="repeats an option"):
        validate_trace(pd.concat([trace, trace.iloc[[0]]], ignore_index=True))


def test_answer_moving_between_checkpoints_is_an_error():
    trace = two_items()
    at_10 = (trace["step"] == 10) & (trace["item_id"] == "a")
    trace.loc[at_10, "is_answer"] = trace.loc[at_10, "option_index"] == 1
    with pytest.raises(TraceTableError, match="options or answer differ"):
        validate_trace(trace)
