"""The bilingual-pair stage: a question, its choices and its correct answer translated, as one checked pair.

Chat models write one JSON object (Appendix E's template into French, German, Italian and Spanish, crossknow's
`TRANSLATE_PAIR_TEMPLATE` into the other twelve); base models translate one field per call, the answer carried
by its index. Checks, in order: a copy of the source, an echo of the prompt or a placeholder, an empty output,
then `crossknow.data.pair_rules.pair_flaws`; a failing output is retried, then reported as '<reason code>: <error>'.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from crossknow.data.languages import language_name
from crossknow.data.pair_rules import FLAWS, flaw_reason, pair_flaws
from crossknow.generation.ask import Ask, ChatPrompt, CompletionPrompt, Part, Parts, Reading, TextOutput, TextParser
from crossknow.generation.echo import echoed_example, holds
from crossknow.generation.overlap import longest_run, units
from crossknow.generation.structured import TRANSPORT_FAILURE, StructuredClient, parse_structured
from crossknow.pitfalls.prompts import (
    TRANSLATION_SHOTS,
    TRANSLATION_TEMPLATES,
    fill,
    translation_completion,
)
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

COPIED_SOURCE = "copied_source"
"""The reason code of an output with a field that is its source text, or mostly its source text (crossknow's
check, `copy_problem`: a copy is not a translation). It runs before every other check, so that the counts of
reasons do not hide copying behind a structural flaw."""

TEMPLATE_ECHO = "template_echo"
"""The reason code of an output that repeats its prompt instead of answering it: a label such as "English:", a
template marker such as "[The Start of", an instruction about JSON, or a few-shot example's output (crossknow's check,
`echo_problem`)."""

EMPTY_OUTPUT = "empty_output"
"""The reason code of a one-field output with no text."""

INVALID_OUTPUT = "invalid output"
"""The reason code of a failed translation that is none of the others (unparseable JSON, a failed text
translation)."""

REASON_CODES = (COPIED_SOURCE, TEMPLATE_ECHO, EMPTY_OUTPUT, PLACEHOLDER, *FLAWS, TRANSPORT_FAILURE)
"""Every reason code a translation error starts with, in the order the checks run."""

COPY_SHARE = 0.5
"""A field is mostly its source when the longest run of words it shares with the source is at least this share of
its words (and at least `COPY_RUN` words); crossknow's threshold."""
COPY_RUN = 3

_ECHO = re.compile(
    r"\[The (?:Start|End) of|\bJSON\b|\[Instruction\]|\[Output Format\]"
    r"|^\s*(?:English|Question|Wrong option|Distraction|Generated Distraction|New question|Text|Choices|Answer)\s*:",
    re.IGNORECASE | re.MULTILINE,
)


class PairFields(BaseModel):
    """The keys of a translated question with its choices and answer (Appendix E's output format), unchecked."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, description="The translated question (Appendix E's key \"text\").")
    choices: list[str] = Field(description="The translated choices, in order.")
    answer: str = Field(description="The translated correct answer, exactly as among the choices.")


class TranslatedPair(PairFields):
    """A translated question with its choices and answer; valid only without a flaw of `pair_flaws`."""

    expected_choices: ClassVar[int] = 0
    answer_index: ClassVar[int] = 0

    @model_validator(mode="after")
    def _no_flaw(self) -> TranslatedPair:
        placeholders = [str(i) for i in range(self.expected_choices)]
        flaws = pair_flaws(placeholders, str(self.answer_index), self.choices, self.answer)
        if flaws:
            raise ValueError(flaw_reason(flaws))
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
    """The reason code of a failed translation: the first of `REASON_CODES` named in `error`, else INVALID_OUTPUT."""
    return next((code for code in REASON_CODES if f"{code}:" in error), INVALID_OUTPUT)


def copy_problem(output: str, sources: Sequence[str], mostly: bool = True) -> str | None:
    """'copied_source: ...' when `output` is one of `sources` (compared by case-folded words) or, with `mostly`,
    mostly one (see `COPY_SHARE`), else None. A source with no lower-case word of four letters or more (a name, a
    number, a formula, a unit: "Mount Everest", "5 N", "H2O") may stay as it is in a translation and is never
    counted as copied (crossknow's rule)."""
    said = units(output, "word")
    for source in sources:
        if not any(word[0].islower() and len(word) >= 4 for word in re.findall(r"[^\W\d_]+", source)):
            continue
        run = longest_run(said, units(source, "word")) if mostly else 0
        if said and (said == units(source, "word") or (run >= COPY_RUN and run >= COPY_SHARE * len(said))):
            return f"{COPIED_SOURCE}: the output repeats its source text ({source[:60]!r}) instead of translating it"
    return None


def echo_problem(output: str, sources: Sequence[str], language: str, examples: Sequence[str] = ()) -> str | None:
    """'template_echo: ...' when `output` repeats its prompt: a label such as "English:" or "<language>:", a template
    marker or a JSON instruction (on either path), or one of `examples`, the outputs of the few-shot examples its
    completion prompt showed (`crossknow.generation.echo.echoed_example`: the whole output, or a run of `ECHO_SPAN`
    characters that no input in `sources` holds; a chat prompt shows none, so its caller passes none);
    'placeholder: ...' when it is a slot in angle brackets; else None."""
    found = _ECHO.search(output) or re.match(rf"\s*{re.escape(language)}\s*:", output, re.IGNORECASE)
    if found:
        return f"{TEMPLATE_ECHO}: the output repeats its prompt ({found.group(0).strip()!r})"
    if example := echoed_example(output, examples, sources):
        return f"{TEMPLATE_ECHO}: the output repeats a few-shot example ({example[:40]!r})"
    if _PLACEHOLDER.fullmatch(output):
        return f"{PLACEHOLDER}: the output is a placeholder in angle brackets, not a translation"
    return None


def translation_examples(lang: str, sources: Sequence[str]) -> tuple[str, ...]:
    """The translations of `TRANSLATION_SHOTS[lang]`, the examples `translation_completion` shows, that an output
    translating `sources` may not repeat: all but those whose English a source holds or shares a run of
    `ECHO_SPAN` characters with (a question about "the boiling point of water" may well be translated as the
    example translates it)."""
    return tuple(target for english, target in TRANSLATION_SHOTS.get(lang, ())
                 if not any(holds(source, english) or echoed_example(source, (english,)) for source in sources))


def field_problem(output: str, sources: Sequence[str], language: str, *, mostly: bool = True,
                  examples: Sequence[str] = (), context: Sequence[str] = ()) -> str | None:
    """Why a one-field output (a translated question, choice or inserted text, a distraction) is no answer to its
    prompt about `sources` in `language`: a copy of a source (checked first; `mostly` as for `copy_problem`), an
    empty output or an echo (`echo_problem` with the prompt's example outputs `examples`; `context`, the prompt's
    other inputs, such as the incorrect option a distraction is written from, may be repeated but not copied);
    None when it passes."""
    if problem := copy_problem(output, sources, mostly):
        return problem
    if not output.strip():
        return f"{EMPTY_OUTPUT}: the output is empty"
    return echo_problem(output, (*sources, *context), language, examples)


def field_parser(sources: Sequence[str], language: str, *, mostly: bool = True, examples: Sequence[str] = (),
                 context: Sequence[str] = ()) -> TextParser:
    """The parser of a one-field output: its stripped text when `field_problem` finds nothing."""

    def parse(text: str) -> tuple[str | None, str | None]:
        problem = field_problem(text, sources, language, mostly=mostly, examples=examples, context=context)
        return (None, problem) if problem else (text.strip(), None)

    return parse


FIELD = TextOutput(field_parser((), ""))
"""A one-field completion output (each prompt passes its own `field_parser`)."""


def pair_problem(question: MCQuestion, fields: PairFields, language: str) -> str | None:
    """Why the chat output `fields` is no translation of `question`, by the checks before the schema's: a field that
    is its source (every field checked for that first; a chat model keeps terms and names on purpose, so only a
    whole copy counts), then one that echoes the prompt (a label or template marker: the chat prompt shows no
    few-shot example); None when neither."""
    checked = [(fields.text, (question.question,)), *((choice, question.choices) for choice in fields.choices)]
    copies = (copy_problem(output, sources, mostly=False) for output, sources in checked)
    echoes = (echo_problem(output, sources, language) for output, sources in checked)
    return next((problem for problem in (*copies, *echoes) if problem), None)


def _pair_parser(question: MCQuestion, language: str, schema: type[TranslatedPair]) -> TextParser:
    """The parser of a chat output {"text", "choices", "answer"}: `pair_problem`, then the schema's flaws."""

    def parse(text: str) -> tuple[TranslatedPair | None, str | None]:
        fields, error = parse_structured(text, PairFields)
        problem = error or pair_problem(question, fields, language)  # type: ignore[arg-type]
        return (None, problem) if problem else parse_structured(text, schema)

    return parse


def translate_pairs(translator: StructuredClient, questions: Sequence[MCQuestion], lang: str,
                    language: str) -> list[MCQuestion | str]:
    """Each question translated into `language` (code `lang`) with its choices and answer, keeping its answer
    index; or, where no valid translation came, '<reason code>: <error>' (a transport failure keeps the
    client's TRANSPORT_FAILURE text, so a caller can ask again). A chat model answers with one JSON output of the
    question's schema; a base model field by field (`pair_fields`)."""
    asks = []
    for question in questions:
        schema = translated_pair_schema(len(question.choices), question.answer)
        asks.append(Ask(ChatPrompt(None, pair_prompt(question, lang, language)), pair_fields(question, lang, language),
                        chat_parse=_pair_parser(question, language, schema), chat_output=schema))
    result: list[MCQuestion | str] = []
    for question, outcome in zip(questions, translator.ask_many(asks, Reading(PairFields, FIELD)), strict=True):
        if outcome.valid:
            value = outcome.value
            result.append(MCQuestion(value.text.strip(), tuple(c.strip() for c in value.choices), question.answer,
                                     lang))
        else:
            result.append(coded(outcome.error or INVALID_OUTPUT))
    return result


def pair_fields(question: MCQuestion, lang: str, language: str) -> Parts:
    """A base model's translation of `question`, with crossknow's few-shot completion prompts
    (`crossknow.pitfalls.prompts.translation_completion`): the question and then each choice asked on its own line,
    each checked by `field_problem`; the answer is the translated choice at the original answer's index, so the
    structure is the source's by construction, never asked of the model. The assembled pair then passes the schema's
    checks (two choices translated alike make an `answer_index` flaw). A question with several failed fields is
    reported by the first failure in `REASON_CODES` order."""
    source = language_name(question.lang)
    fields = ((question.question, (question.question,)), *((choice, question.choices) for choice in question.choices))
    parts = tuple(Part(CompletionPrompt(translation_completion(text, lang, language, source)),
                       field_parser(sources, language,
                                    examples=translation_examples(lang, sources) if source == "English" else ()))
                  for text, sources in fields)
    schema = translated_pair_schema(len(question.choices), question.answer)

    def assemble(values: list[str]) -> tuple[TranslatedPair | None, str | None]:
        text, *choices = values
        pair = {"text": text, "choices": choices, "answer": choices[question.answer]}
        return parse_structured(json.dumps(pair), schema)

    return Parts(parts, assemble, worst=lambda errors: min(errors, key=_rank))


def _rank(error: str) -> int:
    """Where the reason code of `error` comes in `REASON_CODES` (an unknown one last)."""
    code = drop_reason(error)
    return REASON_CODES.index(code) if code in REASON_CODES else len(REASON_CODES)


def coded(error: str) -> str:
    """'<reason code>: <error>' (see `drop_reason`), the error kept whole (it may start with its code already)."""
    code = drop_reason(error)
    return error if error.startswith(f"{code}:") else f"{code}: {error}"


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
