"""Accuracy per normalisation, overall and per group (language, kind, condition, ...)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import pandas as pd

from crossknow.scoring.normalise import Normalisation, loss_column, predicted_options

ITEM_KEY = ["set", "item_id"]
"""Columns that identify an item in a scores table (ids are unique only within a set)."""


def group_keys(fields: Mapping[str, str]) -> list[str]:
    """The groups an item counts in: 'all', each 'field=value', and, with several fields, all of them
    joined ('lang=L,kind=K')."""
    single = [f"{name}={value}" for name, value in fields.items()]
    return ["all", *single, *([",".join(single)] if len(single) > 1 else [])]


def item_predictions(scores: pd.DataFrame, keys: Sequence[str] = ITEM_KEY) -> pd.DataFrame:
    """One row per item (per `keys`): the first row's other columns, `answer_index`, and
    `pred_<normalisation>` (the predicted option_index) for every normalisation.

    `scores` is a scores table (one row per item and option, any order; see scoring.stage).
    """
    keys = list(keys)
    frame = scores.reset_index(drop=True)
    answers = frame[frame["is_answer"].astype(bool)].groupby(keys, sort=False)["option_index"].first()
    result = frame.drop_duplicates(keys).set_index(keys)[[c for c in ("lang", "kind", "condition") if c in frame]]
    result["answer_index"] = answers
    for norm in Normalisation:
        with_loss = frame.assign(_loss=loss_column(frame, norm))
        result[f"pred_{norm.value}"] = predicted_options(with_loss, keys, loss="_loss")
    return result.reset_index()


def accuracy_table(
    predictions: pd.DataFrame, group_by: Sequence[str] = ("lang", "kind")
) -> tuple[dict[str, dict[str, float]], dict[str, int]]:
    """(accuracy[normalisation][group], n_items[group]) from `item_predictions` output; groups as `group_keys`
    of the `group_by` columns."""
    correct: dict[str, dict[str, int]] = {norm.value: defaultdict(int) for norm in Normalisation}
    counts: dict[str, int] = defaultdict(int)
    for row in predictions.to_dict("records"):
        groups = group_keys({name: str(row[name]) for name in group_by})
        for group in groups:
            counts[group] += 1
        for norm in Normalisation:
            if row[f"pred_{norm.value}"] == row["answer_index"]:
                for group in groups:
                    correct[norm.value][group] += 1
    accuracy = {
        norm: {group: correct[norm][group] / count for group, count in sorted(counts.items())} for norm in correct
    }
    return accuracy, dict(sorted(counts.items()))
