"""Accuracy tables on constructed rows with known answers."""

from __future__ import annotations

import pandas as pd
import pytest

from crossknow.errors import CrossknowError
from crossknow.scoring.metrics import accuracy_table, item_predictions


def rows(item_id, lang, kind, sums, answer, tokens=None):
    tokens = tokens or [1] * len(sums)
    return [
        {"set": "s", "item_id": item_id, "lang": lang, "kind": kind, "option_index": i, "is_answer": i == answer,
         "logprob_sum": s, "n_tokens": t, "n_chars": 1, "n_bytes": 1}
        for i, (s, t) in enumerate(zip(sums, tokens, strict=True))
    ]


def test_accuracy_per_group_and_normalisation():
    table = (
        rows("a", "en", "cloze", [-1.0, -2.0], answer=0)  # right under every normalisation
        + rows("b", "en", "question", [-1.0, -2.0], answer=1)  # wrong under every normalisation
        + rows("c", "ja", "cloze", [-4.0, -3.0], answer=0, tokens=[4, 1])  # right by mean_token only
    )
    accuracy, counts = accuracy_table(item_predictions(pd.DataFrame(table[::-1])))  # row order must not matter
    assert counts == {"all": 3, "kind=cloze": 2, "kind=question": 1, "lang=en": 2, "lang=en,kind=cloze": 1,
                      "lang=en,kind=question": 1, "lang=ja": 1, "lang=ja,kind=cloze": 1}
    assert accuracy["mean_token"]["all"] == pytest.approx(2 / 3)
    assert accuracy["sum"]["all"] == pytest.approx(1 / 3)
    assert accuracy["mean_token"]["lang=ja"] == 1.0
    assert accuracy["sum"]["kind=cloze"] == 0.5


def test_ids_are_keyed_within_their_set():
    """The same id in two sets is two items (AdaXEval reuses ids across its cloze and question files)."""
    table = rows("a", "en", "cloze", [-1.0, -2.0], answer=0) + [
        row | {"set": "t"} for row in rows("a", "en", "cloze", [-1.0, -2.0], answer=1)
    ]
    accuracy, counts = accuracy_table(item_predictions(pd.DataFrame(table)))
    assert counts["all"] == 2 and accuracy["sum"]["all"] == 0.5


def test_a_non_finite_loss_is_an_error_naming_the_item_not_a_prediction():
    table = rows("a", "en", "cloze", [-1.0, -2.0], answer=0) + rows("nan-item", "en", "cloze", [float("nan"), -2.0], 0)
    with pytest.raises(CrossknowError, match="nan-item"):
        item_predictions(pd.DataFrame(table))


def test_groups_follow_the_columns_asked_for():
    table = [row | {"condition": "memorisation"} for row in rows("a", "en", "cloze", [-1.0, -2.0], answer=0)]
    accuracy, counts = accuracy_table(item_predictions(pd.DataFrame(table)), group_by=("condition",))
    assert counts == {"all": 1, "condition=memorisation": 1}
