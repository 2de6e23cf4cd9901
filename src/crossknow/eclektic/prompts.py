"""ECLEKTIC's prompts: the five answering settings of Appendix A.3 and the judge prompt of A.2.

The words are the paper's, verbatim; the layout, which the paper's extracted text loses, is crossknow's choice
(docs/eclektic.md). The closed-book setting is the question alone, with no instruction (section 4.1), the setting of
every main result. Language names are English, from one table; an unknown code is an error, never a fallback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, get_args

from crossknow.data import languages
from crossknow.data.eclektic import LANGUAGES
from crossknow.errors import CrossknowError

if TYPE_CHECKING:
    from crossknow.eclektic.examples import Question

Setting = Literal[
    "closed-book", "general-hint", "source-language-name", "source-language-title", "cross-lingual-open-book"
]
"""The answering settings of section 4.4, in the order of Table 3 (least to most information)."""
SETTINGS: tuple[str, ...] = get_args(Setting)


ANSWER_TEMPLATES: dict[str, str] = {
    "closed-book": "{question}",
    "general-hint": "Answer the following question based on your knowledge in another language.\n\n{question}",
    "source-language-name": "Answer the following question based on your knowledge in {in_lang}.\n\n{question}",
    "source-language-title": (
        "Answer the following question based on your knowledge in {in_lang} about {original_title}.\n\n{question}"
    ),
    "cross-lingual-open-book": "Context: {original_context}\n{question}",
}
"""Appendix A.3, one template per setting; {in_lang} is the source language's name,
{original_title} the article title and {original_context} the context, both in the source language."""

JUDGE_TEMPLATE = """**Task:** Determine if an answer to the question is supported by a given text.

**Input (in {target_language}):**
- Text
- Question
- Answer

**Single Word Output (in English):**
- YES: Answer is derived from the text.
- NO: Answer is not derived from the text.

Text:
{context}

Question:
{question}

Answer:
{predicted_answer}

Output:"""
"""Appendix A.2: the judge sees the context, question and answer in the target language."""


def language_name(code: str) -> str:
    """The English name of an ECLEKTIC language code; CrossknowError for any other code."""
    return languages.language_name(code, LANGUAGES, "ECLEKTIC")


def check_setting(setting: str) -> Setting:
    """`setting` when it names one of SETTINGS, else CrossknowError listing them."""
    if setting not in SETTINGS:
        raise CrossknowError(f"unknown answering setting {setting!r}; choose one of {', '.join(SETTINGS)}")
    return setting  # type: ignore[return-value]


def answer_prompt(setting: str, question: Question) -> str:
    """The user message that asks `question` (one question row) in `setting`. The hint settings need
    the source language's name; the title and open-book settings need the row's `title` or
    `source_context`, and a row without it is an error naming the question."""
    return setting_preamble(setting, question) + question.question


def setting_preamble(setting: str, question: Question) -> str:
    """What `setting`'s template puts before the question ('' for closed-book): the instruction of a hint
    setting, or the context line of the open-book one, filled in for `question` (see `answer_prompt`)."""
    template = ANSWER_TEMPLATES[check_setting(setting)].removesuffix("{question}")
    needs = {"source-language-title": "title", "cross-lingual-open-book": "source_context"}.get(setting)
    if needs is not None and not getattr(question, needs):
        raise CrossknowError(
            f"question {question.q_id} ({question.lang}) has no {needs}: the {setting} setting needs it"
        )
    fields = {}
    if "{in_lang}" in template:
        fields["in_lang"] = language_name(question.source_lang)
    if needs is not None:
        fields["original_title" if needs == "title" else "original_context"] = getattr(question, needs)
    return template.format(**fields)


def judge_prompt(target_lang: str, context: str, question: str, predicted_answer: str) -> str:
    """The judge's user message: the target language's name, its translated context and question, and
    the model's answer."""
    return JUDGE_TEMPLATE.format(
        target_language=language_name(target_lang), context=context, question=question,
        predicted_answer=predicted_answer,
    )
