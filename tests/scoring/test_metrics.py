"""Accuracy tables on constructed rows with known answers."""

from __future__ import annotations

import pytest

from crossknow.scoring.metrics import accuracy_table, item_predictions


def rows(item_id, lang, kind, sums, answer, tokens=None):
    tokens = tokens or [1] * len(sums)
    return [
        {"item_id": item_id, "lang": lang, "kind": kind, "option_idx": i, "is_answer": i == answer,
         "logprob_sum": s, "n_tokens": t, "n_chars": 1, "n_bytes": 1}
        for i, (s, t) in enumerate(zip(sums, tokens, strict=True))
    ]


def test_accuracy_per_group_and_normalisation():
    table = (
        rows("a", "en", "cloze", [-1.0, -2.0], answer=0)  # right under every normalisation
        + rows("b", "en", "question", [-1.0, -2.0], answer=1)  # wrong under every normalisation
        + rows("c", "ja", "cloze", [-4.0, -3.0], answer=0, tokens=[4, 1])  # right by mean_token only
    )
    accuracy, counts = accuracy_table(item_predictions(reversed(table)))  # row order must not matter
    assert counts == {"all": 3, "kind=cloze": 2, "kind=question": 1, "lang=en": 2, "lang=en,kind=cloze": 1,
                      "lang=en,kind=question": 1, "lang=ja": 1, "lang=ja,kind=cloze": 1}
    assert accuracy["mean_token"]["all"] == pytest.approx(2 / 3)
    assert accuracy["sum"]["all"] == pytest.approx(1 / 3)
    assert accuracy["mean_token"]["lang=ja"] == 1.0
    assert accuracy["sum"]["kind=cloze"] == 0.5
