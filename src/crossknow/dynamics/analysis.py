"""All dynamics analyses of one trace at once, and their record (dynamics.json)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from crossknow.dynamics.accuracy import accuracy_from_states, chance_from_states
from crossknow.dynamics.losses import correct_loss_from_states, loss_ratio_from_states
from crossknow.dynamics.onset import ONSET_DEFINITION, OnsetParams, overfitting_onset
from crossknow.dynamics.records import (
    AccuracyRow,
    CorrectLossRow,
    DynamicsSummary,
    ItemRef,
    LossRatioRow,
    OnsetRow,
    ShapeCountRow,
    ShapeRow,
    StepInfo,
    TransitionRow,
)
from crossknow.dynamics.shapes import SHAPE_DEFINITIONS, ShapeParams, classify_loss_shapes, count_shapes, shape_examples
from crossknow.dynamics.table import TraceTableError, condition_order, item_states, resolve_steps
from crossknow.dynamics.transitions import count_transitions, transitions_from_states


@dataclass
class DynamicsResult:
    """The analyses' tables (pandas) for one trace; `to_record` gives the dynamics.json record."""

    steps: list[int]
    checkpoints: dict[int, str | None]
    conditions: list[str]
    chance: dict[str, float]
    accuracy: pd.DataFrame
    correct_loss: pd.DataFrame
    loss_ratio: pd.DataFrame
    first_step: int | None
    last_step: int | None
    transitions: pd.DataFrame | None
    transition_counts: pd.DataFrame | None
    shapes: pd.DataFrame | None
    shape_counts: pd.DataFrame | None
    examples: dict[str, tuple[str, str] | None]
    onsets: pd.DataFrame
    shape_params: ShapeParams = field(default_factory=ShapeParams)
    onset_params: OnsetParams = field(default_factory=OnsetParams)
    notes: list[str] = field(default_factory=list)

    def to_record(self) -> DynamicsSummary:
        """The record saved as dynamics.json."""
        def rows(frame: pd.DataFrame | None, model: type, rename: dict[str, str] | None = None) -> list:
            if frame is None:
                return []
            frame = frame.rename(columns=rename or {})
            names = list(model.model_fields)
            return [model(**{k: _plain(v) for k, v in row.items()}) for row in frame[names].to_dict("records")]

        n_items = self.accuracy[self.accuracy["step"] == self.steps[0]].set_index("condition")["n_items"]
        shape_names = {"Stable-Gain": "stable_gain", "Loss-Shielding": "loss_shielding", "Unstable": "unstable"}
        return DynamicsSummary(
            steps=[StepInfo(step=s, checkpoint=self.checkpoints.get(s)) for s in self.steps],
            first_step=self.first_step,
            last_step=self.last_step,
            conditions=self.conditions,
            n_items={c: int(n_items[c]) for c in self.conditions},
            chance_accuracy=self.chance,
            accuracy=rows(self.accuracy, AccuracyRow),
            correct_loss=rows(self.correct_loss, CorrectLossRow),
            loss_ratio=rows(self.loss_ratio, LossRatioRow),
            transitions=rows(self.transition_counts, TransitionRow),
            shape_counts=rows(self.shape_counts, ShapeCountRow, shape_names),
            shapes=rows(self.shapes, ShapeRow),
            shape_examples={
                k: None if v is None else ItemRef(set=v[0], item_id=v[1]) for k, v in self.examples.items()
            },
            onsets=rows(self.onsets, OnsetRow),
            shape_params=asdict(self.shape_params),
            onset_params=asdict(self.onset_params),
            shape_definitions=SHAPE_DEFINITIONS,
            onset_definition=ONSET_DEFINITION,
            notes=self.notes,
        )


def _plain(value: object) -> object:
    """A numpy scalar as a Python one; NaN and missing as None."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return None
    return value.item() if isinstance(value, np.generic) else value


def curve_onset(curve: str, condition: str | None, steps: pd.Series, values: pd.Series, params: OnsetParams) -> dict:
    """One onsets-table row for a curve: curve, condition, onset_step, min_step, min_value."""
    order = np.argsort(steps.to_numpy(), kind="stable")
    ordered_steps, ordered_values = steps.to_numpy()[order], values.to_numpy(dtype=float)[order]
    lowest = int(np.argmin(ordered_values))
    return {
        "curve": curve, "condition": condition,
        "onset_step": overfitting_onset(ordered_steps, ordered_values, tol=params.tol, patience=params.patience),
        "min_step": int(ordered_steps[lowest]), "min_value": float(ordered_values[lowest]),
    }


def _onset_table(rows: list[dict]) -> pd.DataFrame:
    """Onset rows as a table whose step columns hold integers or <NA>."""
    table = pd.DataFrame(rows, columns=["curve", "condition", "onset_step", "min_step", "min_value"])
    return table.astype({"onset_step": "Int64", "min_step": "Int64", "min_value": float})


def read_train_log(train_log: pd.DataFrame) -> pd.DataFrame:
    """The training log's (step, loss[, learning_rate]) rows with a finite loss, sorted by step; raises
    TraceTableError when a column is missing or a step repeats."""
    missing = [c for c in ("step", "loss") if c not in train_log.columns]
    if missing:
        raise TraceTableError(f"training log lacks column(s) {missing}; it has {list(train_log.columns)}")
    columns = [c for c in ("step", "loss", "learning_rate") if c in train_log.columns]
    log = train_log[columns].copy()
    log["loss"] = pd.to_numeric(log["loss"], errors="coerce")
    log = log[np.isfinite(log["loss"].to_numpy(dtype=float))].sort_values("step", kind="stable")
    if log["step"].duplicated().any():
        raise TraceTableError(f"training log repeats step(s) {sorted(set(log.loc[log['step'].duplicated(), 'step']))}")
    return log.reset_index(drop=True)


def analyse_dynamics(
    trace: pd.DataFrame,
    *,
    first_step: int | None = None,
    last_step: int | None = None,
    train_log: pd.DataFrame | None = None,
    shape_params: ShapeParams = ShapeParams(),
    onset_params: OnsetParams = OnsetParams(),
) -> DynamicsResult:
    """Every analysis of a trace table: accuracy, correct-option loss and loss ratio per condition and step,
    transitions and loss shapes between `first_step` and `last_step` (default: first and last checkpoint),
    and the overfitting onset of each condition's correct-loss curve and of the training loss.

    A trace of one checkpoint gets the per-step analyses and a note instead of transitions and shapes.
    """
    states = item_states(trace)
    steps = sorted(int(s) for s in states["step"].unique())
    if "checkpoint" in trace.columns:
        per_step = trace.drop_duplicates("step").set_index("step")["checkpoint"]
        checkpoints = {s: None if pd.isna(per_step[s]) else str(per_step[s]) for s in steps}
    else:
        checkpoints = {s: None for s in steps}
    conditions = condition_order(states["condition"])
    correct_loss = correct_loss_from_states(states)
    notes: list[str] = []
    first = last = None
    transitions = counts = shapes = shape_counts = None
    examples: dict[str, tuple[str, str] | None] = {}
    if len(steps) >= 2 or first_step is not None or last_step is not None:
        first, last = resolve_steps(states["step"], first_step, last_step)
        transitions = transitions_from_states(states, first, last)
        counts = count_transitions(transitions)
        shapes = classify_loss_shapes(trace, first, last, shape_params)
        shape_counts = count_shapes(shapes, conditions)
        examples = shape_examples(shapes)
    else:
        notes.append(f"the trace has one checkpoint (step {steps[0]}): no transitions and no loss shapes")
    onset_rows = [
        curve_onset("correct-loss", c, group["step"], group["mean_correct_loss"], onset_params)
        for c in conditions
        for group in [correct_loss[correct_loss["condition"] == c]]
    ]
    if train_log is not None:
        log = read_train_log(train_log)
        if len(log):
            onset_rows.append(curve_onset("train-loss", None, log["step"], log["loss"], onset_params))
        else:
            notes.append("the training log has no finite loss")
    return DynamicsResult(
        steps=steps, checkpoints=checkpoints, conditions=conditions, chance=chance_from_states(states),
        accuracy=accuracy_from_states(states), correct_loss=correct_loss, loss_ratio=loss_ratio_from_states(states),
        first_step=first, last_step=last, transitions=transitions, transition_counts=counts, shapes=shapes,
        shape_counts=shape_counts, examples=examples, onsets=_onset_table(onset_rows), shape_params=shape_params,
        onset_params=onset_params, notes=notes,
    )
