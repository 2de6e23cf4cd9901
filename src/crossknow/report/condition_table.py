"""The summary a dynamics report opens with: one row per condition (and per run, in a comparison), and the
lead sentence that says it in words. Numbers come from `crossknow.dynamics.condition_summary`."""

from __future__ import annotations

import pandas as pd

from crossknow.dynamics.transitions import TRANSITIONS
from crossknow.report import html

SUMMARY_HEADERS = ["condition", "items", "chance", "accuracy", "loss ratio", *TRANSITIONS, "overfitting onset"]
"""Headers of the trace report's summary table (table-summary)."""


def arrow(first: float, last: float, digits: int = 3) -> str:
    """'first → last', each with `digits` decimals."""
    return f"{first:.{digits}f} → {last:.{digits}f}"


def integer_or_none(value: object) -> int | None:
    """A count or step from a pandas table as an int; None (shown as —) where it is missing (<NA>, NaN)."""
    return None if value is None or pd.isna(value) else int(value)


def summary_cells(row: pd.Series) -> list[object]:
    """The cells of one `condition_summary` row after its condition: items, chance, accuracy first → last, loss
    ratio first → last, the four transition counts and the onset step (— where none)."""
    return [int(row["n_items"]), row["chance"], arrow(row["accuracy_first"], row["accuracy_last"]),
            arrow(row["loss_ratio_first"], row["loss_ratio_last"]),
            *(integer_or_none(row[kind]) for kind in [*TRANSITIONS, "onset_step"])]


def summary_table(summary: pd.DataFrame) -> str:
    """table-summary of a trace report: one row per condition of `condition_summary` output."""
    first, last = int(summary["first_step"].iloc[0]), int(summary["last_step"].iloc[0])
    caption = (f"Per condition, step {first} → step {last}: accuracy, loss ratio (correct / all options; lower is "
               "better), instance transitions, and the step where the correct option's loss began to rise for good")
    return html.table("table-summary", caption, SUMMARY_HEADERS,
                      [[row["condition"], *summary_cells(row)] for _, row in summary.iterrows()])


def lead_sentence(summary: pd.DataFrame) -> str:
    """The finding of one trace in words: accuracy first → last per condition against chance, and the
    conditions whose correct-option loss turned upward."""
    first, last = int(summary["first_step"].iloc[0]), int(summary["last_step"].iloc[0])
    parts = [f"{row.condition} {arrow(row.accuracy_first, row.accuracy_last)} (chance {row.chance:.3f})"
             for row in summary.itertuples()]
    window = f"From step {first} to step {last}" if first != last else f"At step {first} (one checkpoint)"
    text = f"{window}, accuracy: " + "; ".join(parts) + "."
    onsets = [f"{row.condition} after step {int(row.onset_step)}" for row in summary.itertuples()
              if not pd.isna(row.onset_step)]
    if onsets:
        text += " The correct option's loss rose for good (overfitting onset): " + "; ".join(onsets) + "."
    return text
