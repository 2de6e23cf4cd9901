"""What a generated question and answer must not be, on the chat path and the completion path alike. The paper
(section 3.1) asks for a question that "does not refer explicitly to the context or mention the answer"; these
rules and their thresholds are crossknow's reading of it, counted in `crossknow.generation.overlap`'s units (words,
or character bigrams in Japanese and Chinese, so that word boundaries are respected)."""

from __future__ import annotations

from crossknow.generation.ask import one_line
from crossknow.generation.overlap import is_stretch_of, longest_run, share_in, units

COPY_SHARE = 0.8
"""A question whose longest run shared with the paragraph covers this share of it (and at least `COPY_MIN_UNITS`
units) is a copy of the paragraph, as is one that is a stretch of it (crossknow's thresholds)."""
COPY_MIN_UNITS = 4
GROUNDED_SHARE = 0.5
"""An answer that is no stretch of the paragraph is grounded when more than this share of its units occur there
(crossknow's threshold: "a banana" is not grounded by the paragraph's "a")."""


def question_problem(question: str, context: str) -> str | None:
    """Why `question` is no question of its own about `context`: it copies the paragraph; None when it passes."""
    asked = units(question)
    run = longest_run(asked, units(one_line(context)))
    if asked and (run == len(asked) or (run >= COPY_MIN_UNITS and run >= COPY_SHARE * len(asked))):
        return f"the question copies the paragraph: {question[:80]!r}"
    return None


def answer_problem(answer: str, question: str, context: str) -> str | None:
    """Why `answer` may not answer `question` about `context`: the question already says it (the answer is a
    stretch of the question), or it is not grounded in the paragraph; None when it passes."""
    if is_stretch_of(answer, question):
        return f"the question already says the answer: {answer[:80]!r}"
    shown = one_line(context)
    if not is_stretch_of(answer, shown) and share_in(answer, shown) <= GROUNDED_SHARE:
        return f"the answer is not grounded in the paragraph: {answer[:80]!r}"
    return None
