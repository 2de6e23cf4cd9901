"""The finding of one trace in one row per condition: what a report shows first.

For each condition: its items and chance accuracy, accuracy and loss ratio at the first and the last
checkpoint compared, the instance transitions between them, and the overfitting onset of the mean
correct-option loss. Every number comes from `analyse_dynamics`; this module only gathers them.
"""

from __future__ import annotations

import pandas as pd

from crossknow.dynamics.analysis import DynamicsResult
from crossknow.dynamics.transitions import TRANSITIONS

SUMMARY_COLUMNS = ["condition", "n_items", "chance", "first_step", "last_step", "accuracy_first", "accuracy_last",
                   "loss_ratio_first", "loss_ratio_last", "correct_loss_first", "correct_loss_last", *TRANSITIONS,
                   "onset_step"]
"""Columns of `condition_summary`, in order."""


def summary_window(result: DynamicsResult) -> tuple[int, int]:
    """The (first, last) steps a summary compares: the transitions' window, or the one checkpoint twice."""
    if result.first_step is None or result.last_step is None:
        return result.steps[0], result.steps[-1]
    return result.first_step, result.last_step


def _at(table: pd.DataFrame, step: int, column: str) -> dict[str, float]:
    rows = table[table["step"] == step]
    return {str(c): float(v) for c, v in zip(rows["condition"], rows[column], strict=True)}


def condition_summary(result: DynamicsResult) -> pd.DataFrame:
    """One row per condition (in `result.conditions` order), columns SUMMARY_COLUMNS.

    first_step/last_step: `summary_window`; accuracy_*, loss_ratio_* (ratio of sums) and correct_loss_* (mean
    loss of the correct option) at those two steps; retained/acquired/forgotten/unacquired: the transition
    counts between them (<NA> with one checkpoint); onset_step: the overfitting onset of the condition's
    mean correct-option loss over the whole trace (<NA> without a sustained rise).
    """
    first, last = summary_window(result)
    accuracy = {s: _at(result.accuracy, s, "accuracy") for s in (first, last)}
    ratio = {s: _at(result.loss_ratio, s, "loss_ratio") for s in (first, last)}
    correct = {s: _at(result.correct_loss, s, "mean_correct_loss") for s in (first, last)}
    n_items = _at(result.accuracy, first, "n_items")
    counts = (result.transition_counts.set_index("condition") if result.transition_counts is not None
              else pd.DataFrame(columns=TRANSITIONS))
    onsets = result.onsets[result.onsets["curve"] == "correct-loss"].set_index("condition")["onset_step"]
    rows = []
    for condition in result.conditions:
        transitions = [int(counts.loc[condition, kind]) if condition in counts.index else None for kind in TRANSITIONS]
        onset = onsets.get(condition)
        rows.append([condition, int(n_items[condition]), result.chance[condition], first, last,
                     accuracy[first][condition], accuracy[last][condition], ratio[first][condition],
                     ratio[last][condition], correct[first][condition], correct[last][condition], *transitions,
                     None if onset is None or pd.isna(onset) else int(onset)])
    table = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    return table.astype({kind: "Int64" for kind in [*TRANSITIONS, "onset_step"]})
