"""Stage 'queries': one generator writes, per fact, a cloze with exactly one [BLANK] in place of the object
(the subject when the object is vague), kept close to the original sentence; a paraphrased question
in other words; and the answer (the paper's section 3.1.2).

The output is validated (and retried when malformed): one [BLANK] in the cloze, none in the
question, a non-empty answer that the question does not give away. How close the cloze stays to the
sentence is measured, not enforced: `cloze_similarity` is difflib's ratio between the cloze with
the answer filled in and the sentence.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Literal

from pydantic import Field, model_validator

from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.records import FactRecord, QueryRecord
from crossknow.adaxeval.stages import StageRow, call_info, transport_failed
from crossknow.data.schemas import BLANK, Record
from crossknow.generation.structured import StructuredClient

MIN_LEAK_CHARS = 3
"""An answer at least this long must not appear in the question."""


class QueryAnswer(Record):
    """The writer's answer to the 'queries' prompt."""

    cloze: str = Field(description="The sentence with exactly one [BLANK] in place of the answer.")
    blanked: Literal["object", "subject"] = Field(description="Which part of the triple [BLANK] replaces.")
    question: str = Field(description="A question asking for the blanked part in other words.")
    answer: str = Field(description="The exact text that [BLANK] replaced.")

    @model_validator(mode="after")
    def _check(self) -> QueryAnswer:
        if self.cloze.count(BLANK) != 1:
            raise ValueError(f"the cloze must hold exactly one {BLANK}, found {self.cloze.count(BLANK)}")
        if not self.cloze.replace(BLANK, "").strip():
            raise ValueError("the cloze holds nothing but the blank")
        if BLANK in self.question:
            raise ValueError(f"the question must not hold {BLANK}")
        if not self.question.strip() or not self.answer.strip():
            raise ValueError("the question and the answer must not be empty")
        answer = self.answer.strip().lower()
        if len(answer) >= MIN_LEAK_CHARS and answer in self.question.lower():
            raise ValueError("the question gives the answer away (it contains it)")
        return self


def cloze_similarity(cloze: str, answer: str, sentence: str) -> float:
    """difflib ratio of the cloze with `answer` filled in to the original sentence, rounded to 4 places."""
    filled = cloze.replace(BLANK, answer.strip())
    return round(difflib.SequenceMatcher(None, filled, sentence, autojunk=False).ratio(), 4)


def query_rows(
    facts: Sequence[FactRecord], writer: tuple[str, StructuredClient], prompts: PromptTable
) -> list[StageRow[QueryRecord] | None]:
    """One row per fact: kept with its queries, invalid when the writer's output stayed malformed,
    None when the request failed in transport."""
    spec, client = writer
    chat = []
    for fact in facts:
        assert fact.triple is not None
        chat.append(
            prompts.render(
                "queries", fact.sentence.lang, sentence=fact.sentence.text,
                subject=fact.triple.subject, relation=fact.triple.relation, object=fact.triple.object,
            )
        )
    rows: list[StageRow[QueryRecord] | None] = []
    for fact, outcome in zip(facts, client.call_many(chat, QueryAnswer), strict=True):
        if transport_failed(outcome):
            rows.append(None)
            continue
        answer: QueryAnswer | None = outcome.value
        record = QueryRecord(
            fact=fact,
            cloze=answer.cloze.strip() if answer else "",
            question=answer.question.strip() if answer else "",
            answer=answer.answer.strip() if answer else "",
            blanked=answer.blanked if answer else "object",
            cloze_similarity=cloze_similarity(answer.cloze, answer.answer, fact.sentence.text) if answer else 0.0,
            call=call_info(outcome, spec),
        )
        sentence = fact.sentence
        if answer is None:
            rows.append(StageRow(sentence.id, sentence.lang, "invalid", outcome.error or "invalid output", record))
        else:
            note = f"cloze similarity {record.cloze_similarity}"
            rows.append(StageRow(sentence.id, sentence.lang, "kept", note, record))
    return rows
