"""The candidate list: the pairs the probe found (`CandidateRecord`), with the cap of k pairs per original question.

A probe keeps a batch's pairs in the batch's record, committed when the batch ends (`crossknow.pitfalls.probe`);
the list is read back from those records on a resume and written for the user as `candidates.jsonl`. `write_items`
turns it into crossknow items: an English and a target `MCItem` per pair, with one `pair_id`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from crossknow.data.jsonl import write_jsonl
from crossknow.data.schemas import LanguageTag, MCItem, Record, check_choices


class QuestionSide(Record):
    """One side of a saved pair."""

    question: str = Field(description="The (perturbed) question text.")
    choices: list[str] = Field(min_length=2, description="The choices, in order: none empty, no two the same.")
    answer: int = Field(ge=0, strict=True, description="Index of the correct choice.")
    lang: LanguageTag = Field(description="Language code of this side.")
    before: str = Field(default="", description="The text inserted before the original question by all the "
                        "perturbation steps ('' when none; the release's prequestion / transpre).")
    after: str = Field(default="", description="The text inserted after the original question by all the "
                       "perturbation steps ('' when none; the release's sufquestion / transsuf).")

    @model_validator(mode="after")
    def _check(self) -> QuestionSide:
        check_choices(self.choices, self.answer, "choice")
        return self


class LineageStep(Record):
    """One perturbation on the way from the original question to a candidate."""

    node_id: str = Field(description="Id of the pair this step made.")
    parent_id: str = Field(description="Id of the pair it was applied to.")
    depth: int = Field(ge=1, description="Depth of the pair this step made (1 = first perturbation).")
    perturbation_en: str = Field(description="The inserted English text (δq^E), before and after parts joined.")
    perturbation_target: str = Field(description="Its translation as inserted into the target question (δq^T).")
    wrong_option: int | None = Field(description="Index of the incorrect option it was written from; None if none.")
    placement: Literal["before", "after", "both", "none"] | None = Field(
        default=None, description="Where the step put its text, on both sides: 'before' or 'after' the question, "
        "'both' (the direct perturbation) or 'none' (nothing inserted); None in files written before crossknow "
        "recorded it.")


class CandidateRecord(Record):
    """One pair in the candidate list."""

    id: str = Field(description="The pair's id (derived from its lineage; shared by its two items).")
    source_id: str = Field(description="Id of the original English question.")
    recipe: str = Field(description="The recipe that found it (paper, np, dp).")
    english: QuestionSide = Field(description="The English question q^E'.")
    target: QuestionSide = Field(description="The target-language question q^T'.")
    value: float = Field(description="Simulation score V = (mean β^E)^γ − mean β^T.")
    beta_en: dict[str, float] = Field(description="English accuracy of each simulator (by name) over its samples.")
    beta_target: dict[str, float] = Field(description="Target-language accuracy of each simulator.")
    depth: int = Field(ge=0, description="Perturbation steps from the original pair (0 = unperturbed).")
    parent_id: str | None = Field(description="Id of the pair it was perturbed from; None for an original pair.")
    lineage: list[LineageStep] = Field(description="Every perturbation from the original pair, in order.")
    category: str | None = Field(default=None, description="Subject domain (Table 4), when classified.")


CANDIDATES_FILE = "candidates.jsonl"
"""The candidate list as the user reads it: one CandidateRecord a line."""


class CandidateList:
    """The candidate list of one probe, with the per-question cap k: the pairs of the settled batches, and those
    found since."""

    def __init__(self, records: Iterable[CandidateRecord] = (), cap: int = 3):
        self.cap = cap
        self._records: list[CandidateRecord] = []
        self._settled = 0
        self._ids: set[str] = set()
        self._per_source: Counter[str] = Counter()
        for record in records:
            if record.id not in self:
                self._remember(record)
        self._settled = len(self._records)

    def __contains__(self, pair_id: str) -> bool:
        return pair_id in self._ids

    def __len__(self) -> int:
        return len(self._records)

    def count(self, source_id: str) -> int:
        """Pairs in the list from one original question."""
        return self._per_source[source_id]

    def full(self, source_id: str) -> bool:
        """True when the question has its k pairs: its remaining descendants are dropped."""
        return self._per_source[source_id] >= self.cap

    def records(self) -> list[CandidateRecord]:
        """Every candidate, in the order found."""
        return list(self._records)

    def add(self, record: CandidateRecord) -> bool:
        """Add `record`; False, and nothing added, when it is already in the list or its question already has k
        pairs."""
        if record.id in self or self.full(record.source_id):
            return False
        self._remember(record)
        return True

    def new(self) -> list[CandidateRecord]:
        """The pairs added since the list was last settled."""
        return self._records[self._settled :]

    def settle(self, keep: bool) -> None:
        """Keep the new pairs, or drop them (their batch is left for a later run, which finds them again)."""
        if not keep:
            for record in self.new():
                self._ids.discard(record.id)
                self._per_source[record.source_id] -= 1
            del self._records[self._settled :]
        self._settled = len(self._records)

    def export(self, path: str | Path) -> Path:
        """Write the list as JSON lines (candidates.jsonl), atomically."""
        return write_jsonl(path, self._records)

    def write_items(self, path: str | Path, categories: Mapping[str, str | None] | None = None) -> Path:
        """Write the candidates as crossknow items (English, then target, one pair_id), atomically; metadata
        `category` from `categories` (by candidate id) where given, else the record's."""
        items = []
        for record in self._records:
            for side in (record.english, record.target):
                items.append(MCItem(
                    id=f"{record.id}:{side.lang}", lang=side.lang, kind="question", prompt=side.question,
                    options=side.choices, answer=side.answer, source_lang="en", pair_id=record.id,
                    metadata={"source_id": record.source_id, "value": record.value, "depth": record.depth,
                              "recipe": record.recipe,
                              "category": (categories or {}).get(record.id, record.category)},
                ))
        return write_jsonl(path, items)

    def _remember(self, record: CandidateRecord) -> None:
        self._records.append(record)
        self._ids.add(record.id)
        self._per_source[record.source_id] += 1
