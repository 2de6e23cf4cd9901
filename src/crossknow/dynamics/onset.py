"""Overfitting onset of a loss curve (full paper, Sec. 5.1.1: the triangles of Fig. 5).

The paper marks "the point where minimum loss is attained before overfitting induces an upward
trend". `overfitting_onset` makes "upward trend" precise with two parameters; see ONSET_DEFINITION.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from crossknow.errors import CrossknowError


@dataclass(frozen=True)
class OnsetParams:
    """Tolerances of `overfitting_onset`."""

    tol: float = 0.01
    """A value counts as risen when it exceeds the minimum by more than `tol` (absolute, in the curve's
    unit: nats per token for the losses here)."""
    patience: int = 2
    """The rise is sustained when at least this many checkpoints at the end of the curve, consecutively
    through the last one, have all risen."""


ONSET_DEFINITION = (
    "Overfitting onset of a curve (steps s_0 < ... < s_n, values v_0 ... v_n): let m = min v and i* the first "
    "index with v_i* = m. The curve has a sustained rise when its last `patience` or more values, consecutively "
    "through the end, all exceed m + `tol`: with j = the last index whose value is <= m + tol (j >= i*), that "
    "is n - j >= patience. The onset is then s_i*, the step of the minimum; without a sustained rise (a curve "
    f"still falling, flat, or back near its minimum at the end) there is no onset (None). Defaults: "
    f"tol = {OnsetParams.tol} (absolute, the curve's unit), patience = {OnsetParams.patience} checkpoints. "
    "A curve of fewer than patience + 1 points has no onset."
)
"""The onset definition, quoted by the report and the README."""


def overfitting_onset(
    steps: Sequence[int] | np.ndarray | pd.Series,
    values: Sequence[float] | np.ndarray | pd.Series,
    *,
    tol: float = OnsetParams.tol,
    patience: int = OnsetParams.patience,
) -> int | None:
    """The step of the minimum before a sustained rise, or None; see ONSET_DEFINITION.

    Works on any loss curve: a condition's mean correct-option loss, one option's loss, the training
    loss. `steps` need not be sorted but must be distinct; values must be finite.
    """
    if tol < 0 or patience < 1:
        raise ValueError(f"need tol >= 0 and patience >= 1, got tol={tol}, patience={patience}")
    step_array = np.asarray(steps, dtype=np.int64)
    value_array = np.asarray(values, dtype=float)
    if step_array.shape != value_array.shape or step_array.ndim != 1:
        raise CrossknowError(
            f"steps and values must be 1-D and of one length, got {step_array.shape} and {value_array.shape}"
        )
    if len(step_array) == 0:
        raise CrossknowError("an onset needs a curve of at least one point; got none")
    if len(np.unique(step_array)) != len(step_array):
        raise CrossknowError(f"a curve's steps must be distinct, got {step_array.tolist()}")
    if not np.isfinite(value_array).all():
        raise CrossknowError("a curve's values must be finite numbers")
    order = np.argsort(step_array, kind="stable")
    step_array, value_array = step_array[order], value_array[order]
    lowest = value_array.min()
    minimum_index = int(np.argmax(value_array == lowest))
    near_minimum = np.flatnonzero(value_array <= lowest + tol)
    last_near = int(near_minimum[-1])
    risen_at_end = len(value_array) - 1 - last_near
    if risen_at_end >= patience:
        return int(step_array[minimum_index])
    return None


def onsets_by_condition(
    curves: pd.DataFrame, value: str = "mean_correct_loss", *, tol: float = OnsetParams.tol,
    patience: int = OnsetParams.patience,
) -> dict[str, int | None]:
    """Onset of each condition's curve in a (step, condition, `value`) table, e.g. the output of
    `correct_loss_by_condition`; None where a condition's curve has no sustained rise."""
    onsets: dict[str, int | None] = {}
    for condition, group in curves.groupby("condition", sort=True):
        onsets[str(condition)] = overfitting_onset(group["step"], group[value], tol=tol, patience=patience)
    return onsets
