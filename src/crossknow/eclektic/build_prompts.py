"""The prompts that build an ECLEKTIC-style set (the paper's Appendix A.1) and their strict parsers.

The words are the paper's, verbatim, typos included ("In you can't answer ..."); the layout, which the paper's
extracted text loses, is crossknow's choice, as in `crossknow.eclektic.prompts` (docs/eclektic.md). Outputs are
parsed strictly (`parse_question_answer`, `translation_parser`): anything else is invalid, retried, then recorded,
never repaired by guessing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from crossknow.eclektic.build_checks import answer_problem, question_problem
from crossknow.eclektic.prompts import language_name
from crossknow.generation.ask import TextParser

GENERATION_TEMPLATE = """**Task:** Formulate a question in {lang_name} that requires a deep understanding of a given {lang_name} Wikipedia paragraph.

**Requirements:**

* **Context-Specific:** The question must be answerable solely through information presented within the paragraph, excluding general knowledge or common sense.

* **Self-Contained:** The question should be completely self-explanatory, providing all necessary context within its phrasing. Assume the reader has no access to the paragraph when answering the question.

* **Single Concrete Factual Detail:**

- The question should not require multiple answers or involve listing multiple details.

- Avoid asking about opinions, interpretations.

- In you can't answer the question, prefer to generate another question.

- Focus on extracting a specific, concrete, factual detail that the paragraph directly states.

- Be specific:

- If you are asking about an entity be clear about it – Use full names for example.

- Mention expected granularity: If you are asking about a date, instead of asking "when", ask for a decade, year, month, date etc. If you are asking about a location, instead of asking "where", ask for a country, state, city, street, landmark etc.

- Avoid asking questions that their answers are acronyms.

Even for non-English examples keep the convention of using the English words "Paragraph", "Response", "question" and "answer" for specifying the parts being generated.

Generate only the question and answer. No need to continue with additional examples.

**Examples:**

Paragraph: The Great Barrier Reef is the world's largest coral reef system, composed of over 2,900 individual reefs and 900 islands stretching for over 2,300 kilometers (1,400 mi) over an area of approximately 344,400 square kilometers (133,000 sq mi). The reef is located in the Coral Sea, off the coast of Queensland, Australia. The Great Barrier Reef can be seen from outer space and is the world's biggest single structure made by living organisms.

Response: Question: Where is the Great Barrier Reef located? Answer: Coral Sea, off the coast of Queensland, Australia

Paragraph: Die Cazoo Snookerweltmeisterschaft 2023 wurde vom 15. April bis 1. Mai im Crucible Theatre in Sheffield ausgetragen. Mit ihr endete die Saison 2022/23 der World Snooker Tour.[1] Titelverteidiger Ronnie O'Sullivan scheiterte im Viertelfinale gegen Luca Brecel. Der Belgier erreichte das Finale und schlug dort den vierfachen Weltmeister Mark Selby mit 18:15. Brecel ist damit der erste Kontinentaleuropäer, der Weltmeister wurde. In diesem Jahr wurden noch weitere Bestmarken in Bezug auf die 47-jährige "Crucible-Ära" aufgestellt. Unter anderem übertraf Ronnie O'Sullivan mit seiner 31. Endrundenteilnahme die 30 Teilnahmen von Steve Davis.[2] O'Sullivan erzielte auch sein 200. WM-Century-Break. Zweimal wurde ein Maximum Break erzielt, was es 2008 bereits einmal gegeben hatte; das "perfekte Break" in einem WM-Finale gelang 2023 erstmals Mark Selby.

Response: Question: Gegen wen verlor Ronnie O'Sullivan im Viertelfinale der Snooker-Weltmeisterschaft 2023? Answer: Luca Brecel

Paragraph: {context}

Response:"""  # noqa: E501
"""Appendix A.1, "Question and Answer Generation": {lang_name} is the source language's English name,
{context} the article's first sentences."""

TRANSLATION_TEMPLATE = (
    "Translate the provided text from {in_lang} to {out_lang} while maintaining the original meaning and intent. "
    "Ensure accuracy and preserve the entities and concepts expressed in the source text.\n\n"
    "Input in {in_lang}: {text}\nResponse in {out_lang}:"
)
"""Appendix A.1, "Translation": {in_lang} and {out_lang} are English language names."""


def generation_prompt(lang: str, context: str) -> str:
    """The user message that asks for a question and answer about `context`, written in `lang`."""
    return GENERATION_TEMPLATE.format(lang_name=language_name(lang), context=context)


def translation_prompt(in_lang: str, out_lang: str, text: str) -> str:
    """The user message that asks for `text` (in `in_lang`) translated into `out_lang`."""
    return TRANSLATION_TEMPLATE.format(in_lang=language_name(in_lang), out_lang=language_name(out_lang), text=text)


@dataclass(frozen=True)
class GeneratedQA:
    """A question and its answer as the generation prompt's output gave them."""

    question: str
    answer: str


_BOLD_MARKER = re.compile(r"\*\*(question|answer|response)\s*(:?)\s*\*\*\s*(:?)", re.I)
_MARKER = re.compile(r"\b(question|answer)\s*:", re.I)


def parse_question_answer(text: str) -> tuple[GeneratedQA | None, str | None]:
    """(GeneratedQA, None) for an output of the form `Question: ... Answer: ...`, else (None, why not).

    Tolerated: surrounding whitespace, a leading `Response:` (the prompt's last word echoed), the
    markers in any case and in markdown bold, the answer on the question's line or the next. Invalid
    (crossknow's strict reading of the prompt's "Generate only the question and answer"): an empty
    output; anything before `Question:`; not exactly one `Question:` followed by one `Answer:`; an
    empty question or answer; a question or answer that runs over several lines (e.g. a further
    "Paragraph:" example after the answer).
    """
    stripped = _BOLD_MARKER.sub(lambda m: f"{m.group(1)}:", text).strip()
    if not stripped:
        return None, "empty output"
    markers = [(m.group(1).lower(), m.start(), m.end()) for m in _MARKER.finditer(stripped)]
    if [kind for kind, _, _ in markers] != ["question", "answer"]:
        found = ", ".join(f"'{kind.capitalize()}:'" for kind, _, _ in markers) or "neither marker"
        return None, f"expected one 'Question:' then one 'Answer:', found {found}"
    (_, q_start, q_end), (_, a_start, a_end) = markers
    before = stripped[:q_start].strip()
    if before and before.lower() != "response:":
        return None, f"text before 'Question:': {before[:60]!r}"
    question, answer = stripped[q_end:a_start].strip(), stripped[a_end:].strip()
    for name, value in (("question", question), ("answer", answer)):
        if not value:
            return None, f"the {name} is empty"
        if "\n" in value:
            return None, f"the {name} runs over several lines: {value[:80]!r}"
    return GeneratedQA(question=question, answer=answer), None


def question_answer_parser(context: str) -> TextParser:
    """A parser of the chat output about `context`: `parse_question_answer`, then the question's and the answer's
    checks (`crossknow.eclektic.build_checks`)."""

    def parse(text: str) -> tuple[GeneratedQA | None, str | None]:
        generated, error = parse_question_answer(text)
        if generated is None:
            return None, error
        problem = question_problem(generated.question, context) or answer_problem(
            generated.answer, generated.question, context)
        return (None, problem) if problem else (generated, None)

    return parse


def translation_parser(out_lang: str) -> TextParser:
    """A parser `(text) -> (translation, None) | (None, why not)` for a translation into `out_lang`.

    The translation is the stripped output, after a leading "Response in <language>:" echoed from
    the prompt. Invalid: an empty translation; one that repeats the prompt's instruction ("Translate
    the provided text from ..."); one that goes on to write the prompt's own markers ("Input in
    ...:" or "Response in ...:"), i.e. continues the pattern instead of stopping.
    """
    echo = re.compile(rf"^\s*Response in {re.escape(language_name(out_lang))}\s*:", re.I)
    markers = re.compile(r"\b(Input|Response) in [^\n:]{1,40}:", re.I)
    instruction = TRANSLATION_TEMPLATE.split(" {in_lang}")[0]

    def parse(text: str) -> tuple[str | None, str | None]:
        translation = echo.sub("", text, count=1).strip()
        if not translation:
            return None, "empty translation"
        if instruction.lower() in translation.lower():
            return None, "the output repeats the prompt's instruction"
        found = markers.search(translation)
        if found:
            return None, f"the output goes on past the translation ({found.group(0)!r})"
        return translation, None

    return parse
