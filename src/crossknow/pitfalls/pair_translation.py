"""The bilingual-pair stage (issue item 2): a question, its choices and its correct answer translated as one
structured output, valid only without the release's flaws.

The proxy's translation client (temperature 0.001, `ProxyLLM.translator`) writes the question, the
choices and the correct answer together, as one JSON object {"text", "choices", "answer"}. Into French,
German, Italian and Spanish the prompt is the paper's, verbatim: Appendix E's "Template for English-to-X
Translation" (`crossknow.pitfalls.prompts.TRANSLATION_TEMPLATES`), its {choices} slot filled with the
choices as a JSON list (crossknow's choice, as for the answering templates: the paper does not say how
choices are listed); it is sent as the chat's one user message. The paper prints these four only; into
the other twelve languages the prompt is crossknow's `TRANSLATE_PAIR_TEMPLATE` (English instructions, the
same output keys). The output is valid only with the four properties the release breaks
(`crossknow.pitfalls.flaws.pair_flaws`): the same number of choices, the answer among the translated
choices, at the original answer's index and nowhere else, and no empty choice. An invalid
output is retried by the client (a new seed each attempt), then reported with its reason code (a flaw
code, or `INVALID_OUTPUT`). crossknow adds two checks: a field that is a placeholder in angle brackets
(`PLACEHOLDER`, retried like a flaw) and a question that comes back unchanged (`UNTRANSLATED`: a copy is
not a translation). The probe uses the stage for its root pairs (q^E, q^T) and `crossknow pitfalls
expand` for the original part of a seed pair; the semantic check S(q^E', q^T') >= θ' then runs as a
constraint of the probe (by default the LLM judge, `crossknow.pitfalls.judge_similarity`; judge-free,
`crossknow.pitfalls.e5`, which also compares the choices). `expand` uses the same templates whatever the source
language (crossknow's choice: their instructions name the target language only).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from crossknow.generation.structured import ChatPrompt, StructuredClient
from crossknow.pitfalls.flaws import FLAWS, pair_flaws
from crossknow.pitfalls.prompts import TRANSLATION_TEMPLATES, fill
from crossknow.pitfalls.simulate import MCQuestion, render_choices

TRANSLATE_PAIR_TEMPLATE = """Translate the multiple-choice question, its choices and its correct answer below \
into {language}. Keep the meaning of the question and of every choice exactly, keep the choices in the same order, \
translate each choice on its own, leave no choice empty, and give as the answer exactly your translation of the \
correct choice.
[The Start of the Question]
{question}
[The End of the Question]
[The Start of the Choices]
{choices}
[The End of the Choices]
[The Start of the Correct Answer]
{answer}
[The End of the Correct Answer]
Return a JSON object with three keys: "text" (your translation of the question), "choices" (your \
translations of the choices, in order) and "answer" (your translation of the correct answer, written exactly as \
in "choices")."""
"""crossknow's prompt for a question with its choices and answer, as one output, into a language for which the
paper prints no template (all but French, German, Italian and Spanish). It describes the output's keys (those
of Appendix E's templates) instead of showing a filled-in example: a small model copied example placeholders
such as "<the translated question>" as its translation."""

PLACEHOLDER = "placeholder"
"""The reason code of an output with a field such as "<translated choice 1>" (crossknow's check: small models
echo template slots)."""
_PLACEHOLDER = re.compile(r"\s*<[^<>]*>\s*")

UNTRANSLATED = "untranslated"
"""The reason code of an output whose question is the source question unchanged (crossknow's check)."""

INVALID_OUTPUT = "invalid output"
"""The reason code of a failed translation that is none of the four flaws (unparseable JSON, a failed text
translation)."""


class TranslatedPair(BaseModel):
    """A translated question with its choices and answer; valid only without a flaw of `pair_flaws`."""

    model_config = ConfigDict(extra="forbid")
    expected_choices: ClassVar[int] = 0
    answer_index: ClassVar[int] = 0

    text: str = Field(min_length=1, description="The translated question (Appendix E's key \"text\").")
    choices: list[str] = Field(description="The translated choices, in order.")
    answer: str = Field(description="The translated correct answer, exactly as among the choices.")

    @model_validator(mode="after")
    def _no_flaw(self) -> TranslatedPair:
        placeholders = [str(i) for i in range(self.expected_choices)]
        flaws = pair_flaws(placeholders, str(self.answer_index), self.choices, self.answer)
        if flaws:
            raise ValueError("; ".join(f"{code}: {FLAWS[code]}" for code in flaws))
        if any(_PLACEHOLDER.fullmatch(text) for text in (self.text, *self.choices)):
            raise ValueError(f"{PLACEHOLDER}: a field is a placeholder in angle brackets, not a translation")
        return self


@cache
def translated_pair_schema(count: int, answer_index: int) -> type[TranslatedPair]:
    """The output schema of a question with `count` choices whose answer is choice `answer_index`."""
    schema = create_model(
        f"TranslatedPair{count}x{answer_index}", __base__=TranslatedPair,
        choices=(list[str], Field(description="The translated choices, in order.",
                                  json_schema_extra={"minItems": count, "maxItems": count})),
    )
    schema.expected_choices, schema.answer_index = count, answer_index
    return schema


def drop_reason(error: str) -> str:
    """The reason code of a failed translation: the first flaw code (or PLACEHOLDER) named in `error`, else
    INVALID_OUTPUT."""
    return next((code for code in (*FLAWS, PLACEHOLDER) if f"{code}:" in error), INVALID_OUTPUT)


def translate_pairs(translator: StructuredClient, questions: Sequence[MCQuestion], lang: str,
                    language: str) -> list[MCQuestion | str]:
    """Each question translated into `language` (code `lang`) with its choices and answer, keeping its answer
    index; or, where no valid translation came, '<reason code>: <error>' (a transport failure keeps the
    client's TRANSPORT_FAILURE text, so a caller can ask again)."""
    result: list[MCQuestion | str] = [INVALID_OUTPUT] * len(questions)
    for count, index in sorted({(len(q.choices), q.answer) for q in questions}):
        asked = [i for i, q in enumerate(questions) if (len(q.choices), q.answer) == (count, index)]
        prompts = [ChatPrompt(None, pair_prompt(questions[i], lang, language)) for i in asked]
        for i, outcome in zip(asked, translator.call_many(prompts, translated_pair_schema(count, index)), strict=True):
            if outcome.valid and outcome.value.text.strip() == questions[i].question.strip():
                result[i] = f"{UNTRANSLATED}: the question came back unchanged"
            elif outcome.valid:
                value = outcome.value
                result[i] = MCQuestion(value.text.strip(), tuple(c.strip() for c in value.choices), index, lang)
            else:
                error = outcome.error or INVALID_OUTPUT
                result[i] = f"{drop_reason(error)}: {error}"
    return result


def pair_prompt(question: MCQuestion, lang: str, language: str) -> str:
    """The user message asking for `question` in `language` (code `lang`): Appendix E's template for that
    language where the paper prints one (fr, de, it, es), else `TRANSLATE_PAIR_TEMPLATE`."""
    answer = question.choices[question.answer]
    if lang in TRANSLATION_TEMPLATES:
        return fill(TRANSLATION_TEMPLATES[lang], question=question.question,
                    choices=render_choices(question.choices), ground_truth=answer)
    choices = "\n".join(f"{n + 1}. {choice}" for n, choice in enumerate(question.choices))
    return TRANSLATE_PAIR_TEMPLATE.format(language=language, question=question.question, choices=choices,
                                          answer=answer)
