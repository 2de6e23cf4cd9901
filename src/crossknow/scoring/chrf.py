"""chrF (Popović 2015), the character n-gram F-score, as sacrebleu computes it by default.

Character n-grams of orders 1..6 without whitespace, precision and recall averaged over the orders both texts have,
then F_beta with beta = 2; a value in [0, 1], 0 when either text has no character. It needs no model and treats every
script alike: crossknow uses it where an offline surface similarity is enough (ECLEKTIC's pivot check, Pitfalls).
"""

from __future__ import annotations

from collections import Counter

CHRF_ORDER = 6
"""Character n-gram orders 1..6 (chrF's standard)."""
CHRF_BETA = 2.0
"""Recall weighs beta^2 = 4 times precision (chrF's standard)."""


def chrf(hypothesis: str, reference: str, order: int = CHRF_ORDER, beta: float = CHRF_BETA) -> float:
    """chrF of `hypothesis` against `reference`, in [0, 1]."""
    hyp, ref = ("".join(text.split()) for text in (hypothesis, reference))
    precision, recall, orders = 0.0, 0.0, 0
    for n in range(1, order + 1):
        hyp_grams, ref_grams = _ngrams(hyp, n), _ngrams(ref, n)
        if not hyp_grams or not ref_grams:
            continue
        matched = sum((hyp_grams & ref_grams).values())
        precision += matched / sum(hyp_grams.values())
        recall += matched / sum(ref_grams.values())
        orders += 1
    if not orders or precision + recall == 0:
        return 0.0
    precision, recall, factor = precision / orders, recall / orders, beta**2
    return (1 + factor) * precision * recall / (factor * precision + recall)


def _ngrams(text: str, n: int) -> Counter[str]:
    return Counter(text[i : i + n] for i in range(len(text) - n + 1))
