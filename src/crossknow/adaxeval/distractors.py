"""Stage 'distractors': three wrong options per query, plausible, unambiguously wrong, of the answer's type
and similar length (the paper's section 3.1.3).

Length is a surface cue a model can exploit without knowing anything (pick the longest option), so
it is measured for every item: `length_ratio` (mean distractor length / answer length, in
characters; 1 is ideal) and `answer_longest`; the run's summary reports both per language.

Validated (and retried when malformed): exactly three non-empty, distinct distractors. A distractor
equal to the answer (ignoring case and spaces) makes the item invalid.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field, field_validator

from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.records import DistractorRecord, QueryRecord
from crossknow.adaxeval.stages import StageRow, call_info, transport_failed
from crossknow.data.schemas import Record
from crossknow.generation.structured import StructuredClient

N_DISTRACTORS = 3


def normalise_option(text: str) -> str:
    """An option compared for equality: case folded, spaces collapsed, trailing period dropped."""
    return " ".join(text.casefold().split()).rstrip("。.")


class DistractorAnswer(Record):
    """The writer's answer to the 'distractors' prompt."""

    distractors: list[str] = Field(
        min_length=N_DISTRACTORS, max_length=N_DISTRACTORS, description="Three distinct wrong options."
    )

    @field_validator("distractors")
    @classmethod
    def _distinct(cls, values: list[str]) -> list[str]:
        if any(not value.strip() for value in values):
            raise ValueError("a distractor is empty")
        if len({normalise_option(value) for value in values}) != len(values):
            raise ValueError("the distractors are not distinct")
        return [value.strip() for value in values]


def length_cues(answer: str, distractors: Sequence[str]) -> tuple[float, bool]:
    """(mean distractor length / answer length, whether the answer is strictly the longest option)."""
    lengths = [len(d) for d in distractors]
    ratio = sum(lengths) / len(lengths) / max(len(answer), 1)
    return round(ratio, 4), len(answer) > max(lengths)


def distractor_rows(
    queries: Sequence[QueryRecord], writer: tuple[str, StructuredClient], prompts: PromptTable
) -> list[StageRow[DistractorRecord] | None]:
    """One row per query: kept, invalid (malformed output, or a distractor equal to the answer), or
    None when the request failed in transport."""
    spec, client = writer
    chat = [
        prompts.render(
            "distractors", q.fact.sentence.lang, sentence=q.fact.sentence.text, cloze=q.cloze,
            question=q.question, answer=q.answer,
        )
        for q in queries
    ]
    rows: list[StageRow[DistractorRecord] | None] = []
    for query, outcome in zip(queries, client.call_many(chat, DistractorAnswer), strict=True):
        if transport_failed(outcome):
            rows.append(None)
            continue
        sentence = query.fact.sentence
        answer: DistractorAnswer | None = outcome.value
        distractors = answer.distractors if answer else []
        ratio, longest = length_cues(query.answer, distractors) if distractors else (0.0, False)
        record = DistractorRecord(
            query=query, distractors=distractors, length_ratio=ratio, answer_longest=longest,
            call=call_info(outcome, spec),
        )
        if answer is None:
            rows.append(StageRow(sentence.id, sentence.lang, "invalid", outcome.error or "invalid output", record))
        elif normalise_option(query.answer) in {normalise_option(d) for d in distractors}:
            rows.append(StageRow(sentence.id, sentence.lang, "invalid", "a distractor equals the answer", record))
        else:
            rows.append(StageRow(sentence.id, sentence.lang, "kept", f"length ratio {ratio}", record))
    return rows
