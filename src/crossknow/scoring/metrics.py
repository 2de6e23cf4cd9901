"""Accuracy per normalisation, overall and per language, kind, and language x kind."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from crossknow.scoring.normalise import Normalisation, OptionScore, predict


def group_keys(lang: str, kind: str) -> list[str]:
    """The groups an item counts in: 'all', 'lang=L', 'kind=K' and 'lang=L,kind=K'."""
    return ["all", f"lang={lang}", f"kind={kind}", f"lang={lang},kind={kind}"]


def item_predictions(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per item: lang, kind, answer index and the prediction under each normalisation.

    `rows` are scores-table rows (one per item and option, any order).
    """
    options: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        options[row["item_id"]].append(row)
    result = {}
    for item_id, item_rows in options.items():
        item_rows = sorted(item_rows, key=lambda row: row["option_idx"])
        scores = [
            OptionScore(row["logprob_sum"], row["n_tokens"], row["n_chars"], row["n_bytes"]) for row in item_rows
        ]
        answers = [row["option_idx"] for row in item_rows if row["is_answer"]]
        result[item_id] = {
            "lang": item_rows[0]["lang"],
            "kind": item_rows[0]["kind"],
            "answer": answers[0],
            "predictions": {norm.value: predict(scores, norm) for norm in Normalisation},
        }
    return result


def accuracy_table(predictions: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, dict[str, float]], dict[str, int]]:
    """(accuracy[normalisation][group], n_items[group]) from `item_predictions` output."""
    correct: dict[str, dict[str, int]] = {norm.value: defaultdict(int) for norm in Normalisation}
    counts: dict[str, int] = defaultdict(int)
    for item in predictions.values():
        groups = group_keys(item["lang"], item["kind"])
        for group in groups:
            counts[group] += 1
        for norm, predicted in item["predictions"].items():
            if predicted == item["answer"]:
                for group in groups:
                    correct[norm][group] += 1
    accuracy = {
        norm: {group: correct[norm][group] / count for group, count in sorted(counts.items())}
        for norm in correct
    }
    return accuracy, dict(sorted(counts.items()))
