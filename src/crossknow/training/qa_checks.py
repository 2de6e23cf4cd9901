"""The rules a question-answer pair of the instruction recipe must pass (crossknow's: Appendix A.4.1(2) names
no test), so that only self-contained knowledge questions with substantive answers are trained on.

Rules: not_a_question, refers_to_document, copies_document, repeated_question, short_answer and copied_answer,
words compared case-folded after NFKC, punctuation ignored; the thresholds are per language (`PAIR_RULES`). A pair
that fails is recorded with its rule and reason (`RejectedPair`), never used and never silently dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from crossknow.errors import CrossknowError
from crossknow.generation.overlap import longest_run, units
from crossknow.training.records import QAPair, RejectedPair

Unit = Literal["word", "character"]


@dataclass(frozen=True)
class PairRules:
    """The rules' settings for one language."""

    question_end: re.Pattern[str]
    """How a question ends."""
    refers_to_document: re.Pattern[str]
    """Words that point at the source document instead of naming what the question is about."""
    unit: Unit
    """What lengths are counted in: words (scripts written with spaces) or characters (Japanese)."""
    min_answer: int
    """Fewest units of an answer."""
    copied_answer: int
    """Fewest units of an answer that is a verbatim span of the document."""
    copied_question: int
    """Consecutive units a question may share with the document: fewer than this."""


_EN_REFERENCE = re.compile(
    r"\b(?:this|these|that|those|the\s+(?:above|present|current|given|following))\s+"
    r"(?:document|text|passage|paragraph|excerpt|article|abstract|study|studies|paper|report|survey|trial|case|"
    r"cohort|patients?|authors?|researchers?|investigators?|work)\b"
    r"|\bthe\s+(?:document|text|passage|paragraph|excerpt|article|abstract|study|paper|report|authors?|researchers?|"
    r"investigators?)\b"
    r"|\baccording\s+to\s+the\b|\b(?:mentioned|described|discussed|reported|stated)\s+(?:above|here|earlier)\b"
    r"|\b(?:we|our)\b",
    re.IGNORECASE,
)
_JA_REFERENCE = re.compile(
    r"(?<![\u4e00-\u9fff])(?:本|当)(?:研究|稿|論文|文書|文章|文|報告|調査|試験|症例|記事|院|科)"
    r"|この(?:研究|論文|文書|文章|報告|調査|試験|症例|記事|患者|著者)"
    r"|上記|上述|前述|文中|著者|筆者|我々|われわれ|私たち"
)

PAIR_RULES: dict[str, PairRules] = {
    "en": PairRules(re.compile(r"\?\W*$"), _EN_REFERENCE, "word", min_answer=4, copied_answer=8,
                    copied_question=10),
    "ja": PairRules(re.compile(r"(?:か|\?|？)[。」）)\s]*$"), _JA_REFERENCE, "character", min_answer=8,
                    copied_answer=20, copied_question=25),
}
"""crossknow's thresholds per document language (Japanese is written without spaces: counted in characters)."""


def pair_rules(lang: str) -> PairRules:
    """The rules of `lang`; an error naming the table to extend when it has none."""
    if lang not in PAIR_RULES:
        raise CrossknowError(f"no question-answer rules for language {lang!r} (has: {', '.join(PAIR_RULES)}); add "
                             f"them to crossknow.training.qa_checks.PAIR_RULES")
    return PAIR_RULES[lang]


def _plural(count: int, unit: Unit) -> str:
    return f"{count} {unit}{'' if count == 1 else 's'}"


def question_problem(question: str, document: str, lang: str) -> tuple[str, str] | None:
    """(rule, reason) when `question` is no question, refers to `document` or copies it; None when it passes."""
    rules = pair_rules(lang)
    if not rules.question_end.search(question):
        return "not_a_question", "the question does not end as a question"
    reference = rules.refers_to_document.search(question)
    if reference:
        return "refers_to_document", f"the question refers to its source ({reference.group(0)!r}) instead of naming it"
    asked, source = units(question, rules.unit), units(document, rules.unit)
    run = longest_run(asked, source)
    if asked and run == len(asked):
        return "copies_document", "the question is a stretch of the document"
    if run >= rules.copied_question:
        return "copies_document", (f"the question copies {_plural(run, rules.unit)} of the document in a row "
                                   f"(crossknow's limit: fewer than {rules.copied_question})")
    return None


def answer_problem(answer: str, document: str, lang: str) -> tuple[str, str] | None:
    """(rule, reason) when `answer` is too short or a short span copied from `document`; None when it passes."""
    rules = pair_rules(lang)
    said = units(answer, rules.unit)
    if len(said) < rules.min_answer:
        return "short_answer", (f"the answer has {_plural(len(said), rules.unit)} (crossknow's minimum: "
                                f"{rules.min_answer})")
    if len(said) < rules.copied_answer and longest_run(said, units(document, rules.unit)) == len(said):
        return "copied_answer", (f"the answer is a span of {_plural(len(said), rules.unit)} copied from the document "
                                 f"(crossknow's minimum for a copied answer: {rules.copied_answer})")
    return None


def repeated(question: str, earlier: Sequence[str], lang: str) -> tuple[str, str] | None:
    """('repeated_question', reason) when `question` has the words of one of `earlier`; None otherwise."""
    unit = pair_rules(lang).unit
    asked = units(question, unit)
    for number, other in enumerate(earlier, 1):
        if units(other, unit) == asked:
            return "repeated_question", f"the same question as question {number}"
    return None


def screen_pairs(pairs: Sequence[QAPair], document: str, lang: str) -> tuple[list[QAPair], list[RejectedPair]]:
    """(the pairs that pass every rule, in order; the others with their rule and reason)."""
    kept: list[QAPair] = []
    rejected: list[RejectedPair] = []
    for pair in pairs:
        problem = (question_problem(pair.question, document, lang) or repeated(
            pair.question, [p.question for p in kept], lang) or answer_problem(pair.answer, document, lang))
        if problem is None:
            kept.append(pair)
        else:
            rejected.append(RejectedPair(question=pair.question, answer=pair.answer, rule=problem[0],
                                         reason=problem[1]))
    return kept, rejected
