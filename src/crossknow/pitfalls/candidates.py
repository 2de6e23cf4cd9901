"""The candidate list: the pairs the probe found, one `CandidateRecord` a line of `candidates.jsonl`,
append-only and resumable.

A line is appended and synced as soon as a pair qualifies, and a torn last line is cut on the next open. The cap
of k pairs per original question is counted from the file, so it holds across a resume. `write_items` turns the
list into crossknow items: an English and a target `MCItem` per pair, with one `pair_id`.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import Field, ValidationError, model_validator

from crossknow.data.jsonl import iter_json_lines, validation_problem, write_jsonl
from crossknow.data.schemas import LanguageTag, MCItem, Record, check_choices
from crossknow.errors import InputError

R = TypeVar("R", bound=Record)


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


class CandidateList:
    """The append-only candidate file of one probe, with the per-question cap k."""

    def __init__(self, path: str | Path, cap: int = 3):
        self.path = Path(path)
        self.cap = cap
        self._records: list[CandidateRecord] = []
        self._ids: set[str] = set()
        self._per_source: Counter[str] = Counter()
        if self.path.exists():
            self._load()

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
        """Append `record` (synced); False, and nothing written, when it is already in the list or its
        question already has k pairs."""
        if record.id in self or self.full(record.source_id):
            return False
        append_json_line(self.path, record.model_dump(mode="json"))
        self._remember(record)
        return True

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

    def _load(self) -> None:
        for record in read_appended_records(self.path, CandidateRecord):
            if record.id not in self:
                self._remember(record)

    def _remember(self, record: CandidateRecord) -> None:
        self._records.append(record)
        self._ids.add(record.id)
        self._per_source[record.source_id] += 1


def append_json_line(path: Path, value: dict[str, Any]) -> None:
    """Append one JSON line to `path` and sync it (the file is created when missing)."""
    data = (json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def read_appended_records(path: Path, schema: type[R]) -> list[R]:
    """The records of an append-only JSONL file written with `append_json_line`, in order (none when the file
    is missing): a last line torn by a kill is cut first; a line that does not validate is an InputError
    naming the file, the line and the field."""
    if not path.exists():
        return []
    cut_torn_last_line(path)
    records = []
    for line, data in iter_json_lines(path, allow_empty=True):  # a kill in its first write leaves it empty
        try:
            records.append(schema.model_validate(data))
        except ValidationError as error:
            field, reason = validation_problem(error)
            raise InputError(path, reason, line=line, field=field) from None
    return records


def cut_torn_last_line(path: Path) -> bool:
    """Cut a last line that a kill left without its newline; True when one was cut."""
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return False
    end = data.rfind(b"\n") + 1
    with open(path, "r+b") as handle:
        handle.truncate(end)
        handle.flush()
        os.fsync(handle.fileno())
    return True
