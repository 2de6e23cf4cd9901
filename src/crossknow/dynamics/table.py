"""The trace table as the dynamics analyses read it: validation, and one row per checkpoint x item.

The trace table (written by `crossknow trace`) has one row per checkpoint x item x option. An item is
keyed by (set, item_id): ids are unique only within a set. Every analysis first checks the table with
`validate_trace`, so a malformed trace fails with one clear message instead of a wrong number.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from crossknow.errors import CrossknowError
from crossknow.scoring.normalise import predicted_options

ITEM_KEY = ["set", "item_id"]
"""Columns that identify an item across checkpoints."""

REQUIRED_COLUMNS = ["step", "condition", "set", "item_id", "option_index", "is_answer", "loss"]
"""Columns every analysis needs; the trace's other columns (checkpoint, lang, kind, ...) are optional here."""

KNOWN_CONDITION_ORDER = ["memorisation", "intralingual", "interlingual"]
"""The paper's three conditions, in the order figures and tables show them; other names follow, sorted."""


class TraceTableError(CrossknowError):
    """A trace table the dynamics analyses cannot read: a missing column, a missing item, a bad answer key."""


def _examples(frame: pd.DataFrame, columns: list[str], limit: int = 3) -> str:
    rows = frame[columns].drop_duplicates().head(limit)
    return "; ".join(", ".join(f"{c}={row[c]!r}" for c in columns) for _, row in rows.iterrows())


def validate_trace(trace: pd.DataFrame) -> None:
    """Raise `TraceTableError` unless `trace` is a complete, consistent trace table.

    Checks, in order: the required columns are present; the table is not empty; `loss` is finite;
    no (step, set, item_id, option_index) appears twice; exactly one option per checkpoint x item has
    `is_answer`; an item keeps one condition; each step names one checkpoint (when a `checkpoint`
    column is present); every checkpoint holds the same items (a missing item is an error, not a
    silently smaller denominator); and every item has the same options, with the same answer, at
    every checkpoint.
    """
    missing = [column for column in REQUIRED_COLUMNS if column not in trace.columns]
    if missing:
        raise TraceTableError(f"trace table lacks column(s) {missing}; it has {list(trace.columns)}")
    if trace.empty:
        raise TraceTableError("trace table is empty")
    loss = pd.to_numeric(trace["loss"], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(loss)
    if bad.any():
        raise TraceTableError(
            f"trace table has {int(bad.sum())} row(s) whose loss is not a finite number, e.g. "
            + _examples(trace[bad], ["step", *ITEM_KEY, "option_index"])
        )
    option_key = ["step", *ITEM_KEY, "option_index"]
    duplicated = trace.duplicated(option_key, keep=False)
    if duplicated.any():
        raise TraceTableError(
            "trace table repeats an option of an item at a step: " + _examples(trace[duplicated], option_key)
        )
    answers = trace.groupby(["step", *ITEM_KEY], sort=False)["is_answer"].sum()
    wrong = answers[answers != 1]
    if len(wrong):
        raise TraceTableError(
            "every item needs exactly one option with is_answer at each step; not so for "
            + _examples(wrong.rename("n_answers").reset_index(), ["step", *ITEM_KEY, "n_answers"])
        )
    conditions = trace.groupby(ITEM_KEY, sort=False)["condition"].nunique()
    if (conditions > 1).any():
        raise TraceTableError(
            "an item has more than one condition: " + _examples(conditions[conditions > 1].reset_index(), ITEM_KEY)
        )
    if "checkpoint" in trace.columns:
        per_step = trace.groupby("step", sort=True)["checkpoint"].nunique()
        if (per_step > 1).any():
            raise TraceTableError(f"step(s) {list(per_step[per_step > 1].index)} name more than one checkpoint")
    _check_same_items_and_options(trace)


def _check_same_items_and_options(trace: pd.DataFrame) -> None:
    steps = np.sort(trace["step"].unique())
    items = trace[[*ITEM_KEY]].drop_duplicates()
    present = trace[["step", *ITEM_KEY]].drop_duplicates()
    if len(present) != len(steps) * len(items):
        grid = items.merge(pd.DataFrame({"step": steps}), how="cross")
        absent = grid.merge(present, how="left", indicator=True)
        absent = absent[absent["_merge"] == "left_only"]
        per_step = absent.groupby("step").size()
        where = ", ".join(f"step {step}: {count}" for step, count in per_step.items())
        raise TraceTableError(
            f"every checkpoint must hold the same items; missing ({where}), e.g. "
            + _examples(absent, ["step", *ITEM_KEY])
        )
    per_option = trace.groupby([*ITEM_KEY, "option_index"], sort=False).size()
    answer_rows = trace[trace["is_answer"].astype(bool)]
    answers = answer_rows.groupby(ITEM_KEY, sort=False)["option_index"].nunique()
    changed = pd.concat([
        per_option[per_option != len(steps)].reset_index()[ITEM_KEY],
        answers[answers > 1].reset_index()[ITEM_KEY],
    ])
    if len(changed):
        raise TraceTableError("an item's options or answer differ between checkpoints: " + _examples(changed, ITEM_KEY))


def item_states(trace: pd.DataFrame) -> pd.DataFrame:
    """One row per checkpoint x item, after `validate_trace`.

    Columns: step, set, item_id, condition, n_options (K), answer_index, correct_loss (the correct
    option's loss), total_loss (the sum of all K options' losses), best_distractor_loss (the lowest
    loss among the other options), predicted_index (the option with the lowest loss, ties to the lower
    option_index: the paper's argmin, by crossknow.scoring's one prediction rule) and correct
    (predicted_index == answer_index). Sorted by step, set, item_id.
    """
    validate_trace(trace)
    frame = trace[REQUIRED_COLUMNS].copy()
    frame["loss"] = frame["loss"].astype(float)
    frame["is_answer"] = frame["is_answer"].astype(bool)
    frame = frame.sort_values(["step", *ITEM_KEY, "option_index"], kind="stable").reset_index(drop=True)
    groups = frame.groupby(["step", *ITEM_KEY], sort=False)
    states = groups.agg(
        condition=("condition", "first"),
        n_options=("option_index", "size"),
        total_loss=("loss", "sum"),
    )
    answers = frame[frame["is_answer"]].set_index(["step", *ITEM_KEY])
    states["answer_index"] = answers["option_index"]
    states["correct_loss"] = answers["loss"]
    distractors = frame[~frame["is_answer"]].groupby(["step", *ITEM_KEY], sort=False)["loss"].min()
    states["best_distractor_loss"] = distractors.reindex(states.index)
    states["predicted_index"] = predicted_options(frame, ["step", *ITEM_KEY])
    states["correct"] = states["predicted_index"] == states["answer_index"]
    columns = ["condition", "n_options", "answer_index", "correct_loss", "total_loss", "best_distractor_loss",
               "predicted_index", "correct"]
    return states[columns].reset_index().sort_values(["step", *ITEM_KEY], kind="stable").reset_index(drop=True)


def condition_order(conditions: Iterable[object]) -> list[str]:
    """The conditions present: the paper's three first (memorisation, intralingual, interlingual), then the
    rest sorted by name."""
    present = {str(c) for c in conditions}
    known = [c for c in KNOWN_CONDITION_ORDER if c in present]
    return known + sorted(present - set(known))


def resolve_steps(steps: Iterable[object], first_step: int | None, last_step: int | None) -> tuple[int, int]:
    """(first, last) step of a comparison: the first and last checkpoint unless given; both must be in `steps`
    and first < last, so a trace of one checkpoint has no comparison."""
    available = sorted({int(s) for s in steps})  # type: ignore[call-overload]
    first = available[0] if first_step is None else int(first_step)
    last = available[-1] if last_step is None else int(last_step)
    for name, step in (("first_step", first), ("last_step", last)):
        if step not in available:
            raise TraceTableError(f"{name} {step} is not a checkpoint step of the trace; steps are {available}")
    if first >= last:
        if len(available) < 2:
            raise TraceTableError(f"comparing checkpoints needs at least two; the trace has only step {available[0]}")
        raise TraceTableError(f"first_step ({first}) must come before last_step ({last})")
    return first, last
