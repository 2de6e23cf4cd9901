"""All analyses at once, and the dynamics.json record they produce."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from crossknow.dynamics import DynamicsSummary, TraceTableError, analyse_dynamics, transition_counts
from tests.dynamics.test_shapes import STEPS, loss_shielding, stable_gain, zig_zag
from tests.dynamics.traces import Item, build_trace, flat


def test_record_holds_the_frames_numbers():
    trace = build_trace(STEPS, [stable_gain(), loss_shielding(), zig_zag()])
    result = analyse_dynamics(trace)
    record = DynamicsSummary.model_validate(json.loads(result.to_record().model_dump_json()))
    assert [s.step for s in record.steps] == STEPS and record.steps[0].checkpoint == "ckpt/step-0"
    assert (record.first_step, record.last_step) == (0, 400)
    assert record.conditions == ["memorisation", "intralingual"]
    assert record.n_items == {"memorisation": 2, "intralingual": 1}
    assert [(r.step, r.condition, r.accuracy) for r in record.accuracy] == list(
        result.accuracy[["step", "condition", "accuracy"]].itertuples(index=False, name=None))
    counts = transition_counts(trace).set_index("condition")
    assert {t.condition: t.acquired for t in record.transitions} == counts["acquired"].to_dict()
    assert {s.condition: (s.stable_gain, s.loss_shielding, s.unstable) for s in record.shape_counts} == {
        "memorisation": (1, 1, 0), "intralingual": (0, 0, 1)}
    assert record.shape_examples["Stable-Gain"].item_id == "sg"
    assert record.notes == []


def test_one_checkpoint_gets_the_per_step_analyses_and_a_note():
    trace = build_trace([0], [Item("a", "memorisation", 0, [flat(1.0, 1), flat(2.0, 1)])])
    result = analyse_dynamics(trace)
    record = result.to_record()
    assert record.first_step is None and record.transitions == [] and record.shape_counts == []
    assert record.accuracy[0].accuracy == 1.0
    assert record.onsets[0].onset_step is None
    assert "one checkpoint" in record.notes[0]
    with pytest.raises(TraceTableError, match="at least two"):
        analyse_dynamics(trace, last_step=0)


def test_onsets_of_correct_loss_and_training_loss():
    trace = build_trace(STEPS, [Item("m", "memorisation", 0, [[3.0, 2.0, 1.5, 1.8, 2.4], flat(5.0, 5)])])
    log = pd.DataFrame({"step": [0, 10, 20, 30, 40, 50], "loss": [3.0, 2.0, 1.0, 1.5, float("nan"), 2.0],
                        "learning_rate": [1e-4] * 6})
    record = analyse_dynamics(trace, train_log=log).to_record()
    onsets = {(o.curve, o.condition): (o.onset_step, o.min_step, o.min_value) for o in record.onsets}
    assert onsets == {("correct-loss", "memorisation"): (200, 200, 1.5), ("train-loss", None): (20, 20, 1.0)}
    assert record.onset_params == {"tol": 0.01, "patience": 2}


def test_training_log_needs_its_columns():
    trace = build_trace(STEPS, [stable_gain()])
    with pytest.raises(TraceTableError, match="training log lacks"):
        analyse_dynamics(trace, train_log=pd.DataFrame({"step": [0, 1]}))
    with pytest.raises(TraceTableError, match="repeats step"):
        analyse_dynamics(trace, train_log=pd.DataFrame({"step": [0, 0], "loss": [1.0, 2.0]}))
