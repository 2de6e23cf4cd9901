"""Loss-shape classes of acquired items (short paper, Sec. 4 (3) and Fig. 5).

The short paper names three patterns (Stable-Gain, Loss-Shielding, unstable) and shows them only as examples;
SHAPE_DEFINITIONS states crossknow's reading of its words as a rule, with the three tolerances of `ShapeParams`
(crossknow's choice: the paper gives none).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from crossknow.dynamics.table import ITEM_KEY, condition_order, item_states, resolve_steps
from crossknow.dynamics.transitions import transitions_from_states

STABLE_GAIN, LOSS_SHIELDING, UNSTABLE = "Stable-Gain", "Loss-Shielding", "Unstable"
SHAPES = [STABLE_GAIN, LOSS_SHIELDING, UNSTABLE]
"""The three loss-shape classes, in the order tables and figures show them."""


@dataclass(frozen=True)
class ShapeParams:
    """Tolerances of the loss-shape classes, all relative to the item's correct-option loss at the first step
    (crossknow's choice of values; the paper names the classes only)."""

    margin: float = 0.05
    """Least net change that counts: a Stable-Gain fall, and how far the distractors' mean rise must exceed the
    correct option's in a Loss-Shielding item (fraction of the first-step correct loss)."""
    rise: float = 0.05
    """Least net rise of the correct loss that counts as "increase" in a Loss-Shielding item (fraction of the
    first-step correct loss); a smaller change, a flat curve included, is not a rise."""
    tol: float = 0.05
    """Largest single step-to-step move against the trend that still counts as steady (fraction of the
    first-step correct loss)."""


SHAPE_DEFINITIONS = f"""\
Loss shapes of acquired items. An item is acquired when it is wrong at the first step compared and right at
the last (right = its lowest-loss option, ties to the lower index, is the answer). Its curves are taken over every
checkpoint from the first step to the last step: c_0 ... c_n is the correct option's loss (mean token
cross-entropy), D = the mean over the distractors of their net change (d_n - d_0). With m = margin * c_0,
r = rise * c_0 and t = tol * c_0 (fractions of the item's first correct loss; defaults
margin = {ShapeParams.margin}, rise = {ShapeParams.rise}, tol = {ShapeParams.tol}):
- Stable-Gain (the paper: the correct loss "decrease[s] steadily"): c_0 - c_n >= m (net fall), and no step
  rises by more than t (every c_(i+1) - c_i <= t).
- Loss-Shielding (the paper: it "increase[s] while remaining lower than incorrect options"): the correct loss
  rises, c_n - c_0 >= r, steadily (no step falls by more than t: every c_i - c_(i+1) <= t), and the
  distractors rise faster, D - (c_n - c_0) >= m, so that the correct option has the lowest loss at the last
  step, as every acquired item's has. A flat correct loss (a net change below r) is not a rise.
- Unstable: every other acquired item: its correct loss moves against its net direction by more than t in
  some step (a zig-zag, or a fall followed by a rise), or its net change is below both m (as a fall) and r (as
  a rise), a flat curve included, or it rises without the distractors outpacing it by m.
The three classes partition the acquired items. The thresholds m, r and t are crossknow's: the paper shows the
classes by one example each (short paper Fig. 5) and states no rule."""
"""The shape-class definitions, quoted by the report and the README."""


def _classify(
    curves: np.ndarray, answer: np.ndarray, params: ShapeParams
) -> tuple[list[str], dict[str, np.ndarray]]:
    """Classes and measures of items with curves[item, step, option] (K options each) and answer[item]."""
    rows = np.arange(len(curves))
    correct = curves[rows, :, answer]  # (items, steps)
    c_first, c_last = correct[:, 0], correct[:, -1]
    change = c_last - c_first
    steps = np.diff(correct, axis=1)
    max_rise, max_fall = np.maximum(steps.max(axis=1), 0.0), np.maximum((-steps).max(axis=1), 0.0)
    option_change = curves[:, -1, :] - curves[:, 0, :]
    n_options = curves.shape[2]
    if n_options > 1:
        distractor_change = (option_change.sum(axis=1) - option_change[rows, answer]) / (n_options - 1)
    else:
        distractor_change = np.full(len(curves), np.nan)
    lowest_at_end = curves[rows, -1, answer] <= curves[:, -1, :].min(axis=1)
    margin, rise, tol = params.margin * c_first, params.rise * c_first, params.tol * c_first
    stable_gain = (-change >= margin) & (max_rise <= tol)
    shielding = (change >= rise) & (max_fall <= tol) & (distractor_change - change >= margin) & lowest_at_end
    shapes = np.where(stable_gain, STABLE_GAIN, np.where(shielding, LOSS_SHIELDING, UNSTABLE))
    measures = {
        "correct_first": c_first, "correct_last": c_last, "correct_change": change,
        "distractor_mean_change": distractor_change, "max_step_rise": max_rise, "max_step_fall": max_fall,
    }
    return [str(s) for s in shapes], measures


def classify_loss_shapes(
    trace: pd.DataFrame,
    first_step: int | None = None,
    last_step: int | None = None,
    params: ShapeParams = ShapeParams(),
) -> pd.DataFrame:
    """The loss-shape class of every item acquired between `first_step` and `last_step` (default: the first
    and last checkpoint); see SHAPE_DEFINITIONS.

    One row per acquired item: set, item_id, condition, shape (one of SHAPES), correct_first,
    correct_last, correct_change (last - first), distractor_mean_change (mean of the distractors'
    last - first), max_step_rise and max_step_fall (largest step-to-step rise / fall of the correct
    loss, >= 0), n_steps (checkpoints in the window). Sorted by set, item_id; empty (same columns)
    when nothing was acquired.
    """
    states = item_states(trace)
    first, last = resolve_steps(states["step"], first_step, last_step)
    transitions = transitions_from_states(states, first, last)
    acquired = transitions.loc[transitions["transition"] == "acquired", [*ITEM_KEY, "condition"]]
    columns = [*ITEM_KEY, "condition", "shape", "correct_first", "correct_last", "correct_change",
               "distractor_mean_change", "max_step_rise", "max_step_fall", "n_steps"]
    if acquired.empty:
        return pd.DataFrame({column: pd.Series(dtype=object if column in (*ITEM_KEY, "condition", "shape")
                                               else float) for column in columns})
    window = trace.loc[(trace["step"] >= first) & (trace["step"] <= last), ["step", *ITEM_KEY, "option_index",
                                                                               "is_answer", "loss"]]
    window = window.merge(acquired, on=ITEM_KEY, how="inner")
    window = window.sort_values([*ITEM_KEY, "step", "option_index"], kind="stable")
    n_steps = int(window["step"].nunique())
    n_options = window.groupby(ITEM_KEY, sort=False)["option_index"].transform("size") // n_steps
    parts = []
    for k, part in window.groupby(n_options.to_numpy(), sort=True):
        keys = part[ITEM_KEY].drop_duplicates()
        shape = (len(keys), n_steps, int(k))
        curves = part["loss"].to_numpy(dtype=float).reshape(shape)
        answer = part["is_answer"].astype(bool).to_numpy().reshape(shape)[:, 0, :].argmax(axis=1)
        shapes, measures = _classify(curves, answer, params)
        table = keys.reset_index(drop=True)
        table["shape"] = shapes
        for name, values in measures.items():
            table[name] = values
        parts.append(table)
    result = pd.concat(parts).merge(acquired, on=ITEM_KEY, how="left")
    result["n_steps"] = n_steps
    return result[columns].sort_values(ITEM_KEY, kind="stable").reset_index(drop=True)


def count_shapes(shapes: pd.DataFrame, conditions: list[str] | None = None) -> pd.DataFrame:
    """Counts per condition from `classify_loss_shapes` output: condition, n_acquired, and one column per
    class in SHAPES. `conditions` lists conditions to show even with no acquired item (zero rows). Conditions
    in `condition_order`."""
    counts = pd.crosstab(shapes["condition"], shapes["shape"]) if len(shapes) else pd.DataFrame()
    index = condition_order(set(conditions or []) | set(shapes["condition"]))
    counts = counts.reindex(index=index, columns=SHAPES, fill_value=0).fillna(0).astype(int)
    counts.insert(0, "n_acquired", counts.sum(axis=1).astype(int))
    counts.index.name, counts.columns.name = "condition", None
    return counts.reset_index()


def shape_examples(shapes: pd.DataFrame) -> dict[str, tuple[str, str] | None]:
    """One (set, item_id) example per class, the clearest of its class, or None when a class has no item.

    Clearest: Stable-Gain, the largest relative net fall of the correct loss; Loss-Shielding, the largest
    lead of the distractors' mean rise over the correct option's rise, relative; Unstable, the largest
    back-and-forth movement, min(max_step_rise, max_step_fall), relative (all relative to the first-step
    correct loss). Ties go to the first (set, item_id).
    """
    scale = shapes["correct_first"].where(shapes["correct_first"] > 0, 1.0)
    strength = {
        STABLE_GAIN: -shapes["correct_change"] / scale,
        LOSS_SHIELDING: (shapes["distractor_mean_change"] - shapes["correct_change"]) / scale,
        UNSTABLE: shapes[["max_step_rise", "max_step_fall"]].min(axis=1) / scale,
    }
    examples: dict[str, tuple[str, str] | None] = {}
    for shape in SHAPES:
        members = shapes["shape"] == shape
        if not members.any():
            examples[shape] = None
            continue
        ranked = shapes[members].assign(_strength=strength[shape][members])
        best = ranked.sort_values(["_strength", *ITEM_KEY], ascending=[False, True, True], kind="stable").iloc[0]
        examples[shape] = (str(best["set"]), str(best["item_id"]))
    return examples
