"""The build's prompts for base models (a client whose `prompt_format` is completion): crossknow's own few-shot
prompts, one short field per call, stopped at the newline, with strict parsers; a chat model gets the paper's.

A question, then its answer, after A.1's two examples; each translated field after three invented shots
(`crossknow.eclektic.shots`). Rejected with a reason: an empty output, a shot's echo, a run-on into the next marker,
`build_checks`' rejections, a translation that copies a text of over three words or 40 characters (docs/eclektic.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from crossknow.eclektic.build_checks import answer_problem, question_problem
from crossknow.eclektic.prompts import language_name
from crossknow.eclektic.shots import invented
from crossknow.generation.ask import CompletionPrompt, TextOutput, TextParser, one_line
from crossknow.generation.echo import echoed_example

GENERATION_SHOTS: tuple[tuple[str, str, str], ...] = (
    ("The Great Barrier Reef is the world's largest coral reef system, composed of over 2,900 individual reefs and "
     "900 islands stretching for over 2,300 kilometers (1,400 mi) over an area of approximately 344,400 square "
     "kilometers (133,000 sq mi). The reef is located in the Coral Sea, off the coast of Queensland, Australia. The "
     "Great Barrier Reef can be seen from outer space and is the world's biggest single structure made by living "
     "organisms.",
     "Where is the Great Barrier Reef located?", "Coral Sea, off the coast of Queensland, Australia"),
    ("Die Cazoo Snookerweltmeisterschaft 2023 wurde vom 15. April bis 1. Mai im Crucible Theatre in Sheffield "
     "ausgetragen. Mit ihr endete die Saison 2022/23 der World Snooker Tour. Titelverteidiger Ronnie O'Sullivan "
     "scheiterte im Viertelfinale gegen Luca Brecel. Der Belgier erreichte das Finale und schlug dort den vierfachen "
     "Weltmeister Mark Selby mit 18:15. Brecel ist damit der erste Kontinentaleuropäer, der Weltmeister wurde.",
     "Gegen wen verlor Ronnie O'Sullivan im Viertelfinale der Snooker-Weltmeisterschaft 2023?", "Luca Brecel"),
)
"""(paragraph, question, answer): the two examples of the paper's A.1 generation prompt (the German paragraph
shortened to its first five sentences, without its footnote marks)."""
_MARKERS = re.compile(r"\b(Paragraph|Question|Answer)\s*:", re.I)


def _generation_block(fields: Sequence[tuple[str, str]]) -> str:
    """The lines "Name: value" of `fields`, the last one's value left for the model where it is ''."""
    return "\n".join(f"{name}: {one_line(value)}" if value else f"{name}:" for name, value in fields)


def question_completion(context: str) -> CompletionPrompt:
    """The prompt whose one-line continuation is a question about `context` (the article's first sentences)."""
    shots = [_generation_block([("Paragraph", p), ("Question", q)]) for p, q, _ in GENERATION_SHOTS]
    return CompletionPrompt("\n\n".join([*shots, _generation_block([("Paragraph", context), ("Question", "")])]))


def answer_completion(context: str, question: str) -> CompletionPrompt:
    """The prompt whose one-line continuation is the answer to `question` about `context`."""
    shots = [_generation_block([("Paragraph", p), ("Question", q), ("Answer", a)]) for p, q, a in GENERATION_SHOTS]
    asked = _generation_block([("Paragraph", context), ("Question", question), ("Answer", "")])
    return CompletionPrompt("\n\n".join([*shots, asked]))


def _field(
    text: str, shot_texts: set[str], markers: re.Pattern[str] = _MARKERS, what: str = "output",
    place: str = "its field", sources: tuple[str, ...] = (),
) -> tuple[str | None, str | None]:
    """The stripped output, or why it is no field: empty (named `what`), a shot's output as a whole (the shared
    rule of `crossknow.generation.echo`; one that `sources`, the prompt's input, holds is no echo), or running on
    into a next marker of `markers` (past `place`)."""
    value = text.strip()
    if not value:
        return None, f"empty {what}"
    if echoed_example(value, shot_texts, sources, span=None):
        return None, f"the output echoes an example of the prompt: {value[:80]!r}"
    marker = markers.search(value)
    if marker:
        return None, f"the output goes on past {place} ({marker.group(0)!r})"
    return value, None


def question_parser(context: str) -> TextParser:
    """A parser of the question about `context`: the checks of `_field`, then `question_problem`."""

    def parse(text: str) -> tuple[str | None, str | None]:
        question, error = _field(text, {q for _, q, _ in GENERATION_SHOTS})
        if question is None:
            return None, error
        problem = question_problem(question, context)
        return (None, problem) if problem else (question, None)

    return parse


def answer_parser(context: str, question: str) -> TextParser:
    """A parser of the answer to `question` about `context`: the checks of `_field`, then `answer_problem`."""

    def parse(text: str) -> tuple[str | None, str | None]:
        answer, error = _field(text, {a for _, _, a in GENERATION_SHOTS})
        if answer is None:
            return None, error
        problem = answer_problem(answer, question, context)
        return (None, problem) if problem else (answer, None)

    return parse


GENERATED_FIELD = TextOutput(question_parser(""))
"""A generated question or answer (each prompt passes its own `question_parser` or `answer_parser`)."""


def translation_completion(in_lang: str, out_lang: str, text: str) -> CompletionPrompt:
    """The prompt whose one-line continuation is `text` (in `in_lang`) translated into `out_lang`."""
    source, target = invented(in_lang), invented(out_lang)
    in_name, out_name = language_name(in_lang), language_name(out_lang)
    pairs = [(source.questions[0], target.questions[0]), (source.answers[0], target.answers[0]),
             (source.sentence, target.sentence)]
    blocks = [f"{in_name}: {a}\n{out_name}: {b}" for a, b in pairs]
    blocks.append(f"{in_name}: {one_line(text)}\n{out_name}:")
    return CompletionPrompt("\n\n".join(blocks))


def completion_translation_parser(in_lang: str, out_lang: str, text: str) -> TextParser:
    """A parser of the translation of `text` from `in_lang` into `out_lang` (see the module docstring)."""
    target = invented(out_lang)
    echoes = {target.questions[0], target.answers[0], target.sentence}
    names = re.compile(rf"\b({re.escape(language_name(in_lang))}|{re.escape(language_name(out_lang))})\s*:")

    def parse(output: str) -> tuple[str | None, str | None]:
        translation, error = _field(output, echoes, names, "translation", "the translation", (text,))
        if translation is None:
            return None, error
        long = len(translation.split()) > 3 or len(translation) > 40
        if in_lang != out_lang and translation == one_line(text) and long:
            return None, "the output copies the text untranslated"
        return translation, None

    return parse
