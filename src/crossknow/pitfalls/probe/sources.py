"""The probe's starting points: English multiple-choice questions sampled equally over source files (section 2.1,
Appendix B.1), kept only when every simulator answers them right in English (crossknow's prefilter, not the paper's).

A source is a released `source/*.json` file or any crossknow item file (its English question items). `n` is split
equally over the files, a short file's shortfall shared by the others, each file drawn with a seed of (seed, file
name). A malformed record is an InputError; a question that cannot be asked is reported, never drawn.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field

from crossknow.data.formats import load_item_set
from crossknow.data.guarded import first_char, load_json
from crossknow.data.hub_data import data_file
from crossknow.data.jsonl import mc_item_or_problem, read_json_record, require, require_strings
from crossknow.data.schemas import InvalidRecord, MCItem, Record
from crossknow.errors import InputError
from crossknow.pitfalls.pairs import SourceQuestion
from crossknow.pitfalls.probe.spend import Spend
from crossknow.pitfalls.simulate import MCQuestion, Simulator
from crossknow.store.hashing import file_sha256


@dataclass
class SourceFile:
    """The usable English questions of one file and its records that cannot be asked."""

    path: Path
    name: str
    """Unique among the files of one sample: the file's stem (with #2, #3... for a repeated stem)."""
    questions: list[SourceQuestion] = field(default_factory=list)
    invalid: list[InvalidRecord] = field(default_factory=list)


def released_records(path: Path) -> list | None:
    """The records of a released `source/*.json` file (a JSON list whose first object has `choices` and no
    `transquestion`), read through `crossknow.data.guarded`; None for any other kind of file."""
    if path.suffix != ".json" or first_char(path) != "[":
        return None
    data = load_json(path)
    if isinstance(data, list) and data and isinstance(data[0], dict) and "choices" in data[0] \
            and "transquestion" not in data[0]:
        return data
    return None


def read_source_file(path: str | Path, name: str | None = None) -> SourceFile:
    """The English multiple-choice questions of one source file (see the module docstring); ids are
    `name:<id>` (`name:<position>` for the released files)."""
    path = Path(path)
    name = name or path.stem
    source = SourceFile(path, name)
    records = released_records(path)
    if records is not None:
        for position, record in enumerate(records, start=1):
            if not isinstance(record, dict):
                raise InputError(path, f"expected a question object, found {type(record).__name__}", line=position)
            question = _released_question(record, path, position, f"{name}:{position - 1}")
            (source.invalid if isinstance(question, InvalidRecord) else source.questions).append(question)
    else:
        item_set = load_item_set(path)
        source.invalid.extend(item_set.invalid)
        for item in item_set.items:
            if isinstance(item, MCItem) and item.lang == "en" and item.kind == "question":
                question = MCQuestion(item.prompt, tuple(item.options), item.answer, "en")
                source.questions.append(SourceQuestion(f"{name}:{item.id}", question))
    if not source.questions:
        raise InputError(path, f"no English multiple-choice question among its records "
                               f"({len(source.invalid)} could not be asked)")
    return source


def _released_question(record: dict, path: Path, line: int, question_id: str) -> SourceQuestion | InvalidRecord:
    """One record of a released source file, or why it cannot be asked."""
    text = require(record, "question", str, path, line)
    choices = require_strings(record, "choices", path, line)
    answer = require(record, "answer", str, path, line)
    matches = [index for index, choice in enumerate(choices) if choice == answer]
    if len(matches) != 1:
        where = "is not among" if not matches else "matches several of"
        return InvalidRecord(path=str(path), line=line, field="answer",
                             reason=f"answer {answer!r} {where} the {len(choices)} choices")
    item = mc_item_or_problem(
        {"id": question_id, "lang": "en", "kind": "question", "prompt": text, "options": choices, "answer": matches[0]},
        {"prompt": "question", "options": "choices"},
    )
    if not isinstance(item, MCItem):
        return InvalidRecord(path=str(path), line=line, field=item[0], reason=item[1])
    return SourceQuestion(question_id, MCQuestion(text, tuple(choices), matches[0], "en"))


def read_source_files(paths: Sequence[str | Path]) -> list[SourceFile]:
    """Every file read, with unique names (a repeated stem gets #2, #3, ...)."""
    files, seen = [], {}
    for path in map(data_file, paths):
        stem = path.stem
        seen[stem] = seen.get(stem, 0) + 1
        files.append(read_source_file(path, stem if seen[stem] == 1 else f"{stem}#{seen[stem]}"))
    return files


def shares(sizes: Sequence[int], n: int) -> list[int]:
    """How many questions to draw from each file: n // F each, one more for the first n % F files in the order
    given, a file with fewer than its share giving all it has and the shortfall shared likewise over the files
    that have more; their sum is min(n, total)."""
    counts = [0] * len(sizes)
    left = min(n, sum(sizes))
    while left:
        open_files = [i for i, size in enumerate(sizes) if counts[i] < size]
        base, extra = divmod(left, len(open_files))
        for rank, i in enumerate(open_files):
            take = min(base + (rank < extra), sizes[i] - counts[i])
            counts[i] += take
            left -= take
    return counts


def sample_sources(files: Sequence[SourceFile], n: int, seed: int) -> list[SourceQuestion]:
    """n questions drawn equally over `files` with `seed`, file by file in the order given."""
    drawn: list[SourceQuestion] = []
    for source, count in zip(files, shares([len(f.questions) for f in files], n), strict=True):
        drawn += random.Random(f"{seed}:{source.name}").sample(source.questions, count)
    return drawn


class FileReport(Record):
    """One source file of a sample."""

    path: str = Field(description="The file.")
    name: str = Field(description="Its name in the question ids.")
    sha256: str = Field(description="SHA-256 of the file.")
    available: int = Field(description="Usable English questions in the file.")
    unusable: int = Field(description="Records that cannot be asked (answer not among the choices, empty choice).")
    drawn: int = Field(description="Questions drawn from it.")
    kept: int = Field(description="Drawn questions the prefilter kept.")


class SourceSample(Record):
    """sources.json of a probe run: what was drawn, and what the English prefilter kept and why."""

    seed: int = Field(description="Seed of the draw.")
    n: int = Field(description="Questions asked for (drawn before the prefilter).")
    simulators: list[str] = Field(description="The simulators of the prefilter (empty: no prefilter).")
    answering: str = Field(description="How the simulators answered (loss and its rule, or generative).")
    files: list[FileReport] = Field(description="Per source file.")
    drawn: int = Field(description="Questions drawn.")
    kept: int = Field(description="Questions every simulator answered right in English: the probe's sources.")
    dropped_wrong: int = Field(description="Dropped: some simulator answered wrong in English.")
    dropped_invalid: int = Field(description="Dropped: no wrong answer, but some simulator's answer was invalid "
                                 "after its retries (never counted as wrong).")
    wrong_by_simulator: dict[str, int] = Field(description="English wrong answers per simulator.")
    invalid_by_simulator: dict[str, int] = Field(description="Invalid English answers per simulator.")
    kept_ids: list[str] = Field(description="Ids of the kept questions, in draw order.")
    dropped: dict[str, str] = Field(description="Why each dropped question was dropped, by id.")
    spend: Spend | None = Field(default=None, description="What the prefilter spent, whole run: calls = questions "
                                "the simulators answered in English (drawn x simulators), tokens and cost of "
                                "generative simulators (a request a killed prefilter paid counts once), seconds of "
                                "the invocation that finished it; None where not recorded (`prefilter` alone).")


def prefilter(
    files: Sequence[SourceFile], n: int, seed: int, simulators: Sequence[Simulator], answering: str
) -> tuple[list[SourceQuestion], SourceSample]:
    """Draw n questions (`sample_sources`) and keep those every simulator answers right in English; a
    question with an invalid answer and no wrong one is dropped as invalid, not as wrong."""
    drawn = sample_sources(files, n, seed)
    wrong: dict[str, set[str]] = {}
    invalid: dict[str, set[str]] = {}
    for simulator in simulators:
        answers = simulator.answer([s.question for s in drawn])
        wrong[simulator.name] = {s.id for s, a in zip(drawn, answers, strict=True)
                                 if a.choice is not None and a.choice != s.question.answer}
        invalid[simulator.name] = {s.id for s, a in zip(drawn, answers, strict=True) if a.choice is None}
    dropped: dict[str, str] = {}
    for s in drawn:
        wrong_by = [name for name, ids in wrong.items() if s.id in ids]
        invalid_by = [name for name, ids in invalid.items() if s.id in ids]
        if wrong_by:
            dropped[s.id] = "wrong in English: " + ", ".join(wrong_by)
        elif invalid_by:
            dropped[s.id] = "invalid answer in English: " + ", ".join(invalid_by)
    kept = [s for s in drawn if s.id not in dropped]
    drawn_from = {f.name: sum(s.id.startswith(f"{f.name}:") for s in drawn) for f in files}
    kept_from = {f.name: sum(s.id.startswith(f"{f.name}:") for s in kept) for f in files}
    report = SourceSample(
        seed=seed, n=n, simulators=[s.name for s in simulators], answering=answering,
        files=[FileReport(path=str(f.path), name=f.name, sha256=file_sha256(f.path), available=len(f.questions),
                          unusable=len(f.invalid), drawn=drawn_from[f.name], kept=kept_from[f.name]) for f in files],
        drawn=len(drawn), kept=len(kept), dropped_wrong=sum(r.startswith("wrong") for r in dropped.values()),
        dropped_invalid=sum(r.startswith("invalid") for r in dropped.values()),
        wrong_by_simulator={name: len(ids) for name, ids in wrong.items()},
        invalid_by_simulator={name: len(ids) for name, ids in invalid.items()},
        kept_ids=[s.id for s in kept], dropped=dropped,
    )
    return kept, report


def read_source_sample(path: Path) -> SourceSample:
    """A run's sources.json, read back; InputError naming the file and the field when it is no SourceSample."""
    return read_json_record(path, SourceSample)
