"""The automatic check of a translation through English, crossknow's addition to a step the paper did by hand.

Each translated question, answer and context is translated back (into English; the English translation into the
source language) with the paper's prompt and compared by chrF (`crossknow.scoring.chrf`) with the version it should
match. A field below the threshold, or an invalid translation or back-translation, flags the row for the reviewer,
never drops it. Why chrF and not sentence embeddings: docs/eclektic.md.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from crossknow.scoring.chrf import chrf

FIELDS = ("question", "answer", "context")
"""The texts of one question row that are translated and checked, in this order."""


class Texts(BaseModel):
    """A question, its answer and its context in one language; None where the model's output was invalid."""

    model_config = ConfigDict(extra="forbid")

    question: str | None = Field(description="The question; None when its output was invalid after retries.")
    answer: str | None = Field(description="The answer; None when its output was invalid after retries.")
    context: str | None = Field(description="The context (the article's first sentences); None when invalid.")


class PivotCheck(BaseModel):
    """The back-translation of one translated row and how close it comes to the version it should match."""

    model_config = ConfigDict(extra="forbid")

    pivot_lang: str = Field(description="Language of the back-translation: 'en', or the source language for "
                                        "the translation into English.")
    back: Texts = Field(description="The row's question, answer and context translated into `pivot_lang`.")
    scores: dict[str, float | None] = Field(
        description="chrF in [0, 1] of each back-translated field against the `pivot_lang` version; None "
                    "where the translation or the back-translation is invalid.")
    flagged: bool = Field(description="True when a score is below the threshold or missing: a reviewer "
                                      "should look at this row first.")


def pivot_check(pivot_lang: str, back: Texts, reference: Texts, threshold: float) -> PivotCheck:
    """Compare each back-translated field with `reference` (the same fields in `pivot_lang`)."""
    scores: dict[str, float | None] = {}
    for field in FIELDS:
        hypothesis, expected = getattr(back, field), getattr(reference, field)
        scores[field] = None if hypothesis is None or expected is None else round(chrf(hypothesis, expected), 4)
    flagged = any(score is None or score < threshold for score in scores.values())
    return PivotCheck(pivot_lang=pivot_lang, back=back, scores=scores, flagged=flagged)
