"""ECLEKTIC's units: question rows (one question in one language) and examples (q_id, target language).

An example is a question asked in one target language, its source language included (Table 1: 384 x 12 = 4,608).
`load_eclektic_set` reads ECLEKTIC's released wide JSON lines (variant "main" or "popular") and crossknow's own item
files of QAItems or question MCItems whose translations share `pair_id` and carry `source_lang`. What each reports,
and why an `interlingual.jsonl` is refused: docs/eclektic.md, "Item files". A malformed record is an InputError.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from crossknow.data.eclektic import LANGUAGES, read_eclektic
from crossknow.data.formats import detect_format
from crossknow.data.jsonl import build_item, iter_json_lines
from crossknow.data.pairing import InterlingualLink
from crossknow.data.parquet import read_parquet
from crossknow.data.schemas import InvalidRecord, MCItem, QAItem
from crossknow.errors import InputError

Variant = Literal["main", "popular"]


@dataclass(frozen=True)
class Question:
    """One question in one language."""

    q_id: str
    """The question's id, shared by its translations."""
    lang: str
    """The language of `question`, `answer` and `context`."""
    source_lang: str
    """The language whose Wikipedia (or training data) the fact lives in."""
    question: str
    """The question, in `lang`."""
    answer: str
    """The reference answer, in `lang`."""
    context: str | None
    """The passage the question was written from, translated into `lang` (the judge reads it)."""
    title: str | None
    """The article's title in the source language (the "source language title" hint)."""
    source_context: str | None
    """The passage in the source language (the cross-lingual open-book prompt)."""


@dataclass
class EclekticSet:
    """The questions of one file and the languages each is evaluated in."""

    name: str
    """The set's name (the file's stem)."""
    variant: Variant
    """'main' (every question in every language of the set) or 'popular' (listed languages only)."""
    questions: list[Question]
    """Every usable question row, in file order."""
    targets: dict[str, tuple[str, ...]]
    """q_id -> the languages it is evaluated in: its source language first, then the others in the set's order."""
    invalid: list[InvalidRecord] = field(default_factory=list)
    """Records read but not usable, each with its reason."""
    _rows: dict[tuple[str, str], Question] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rows = {(row.q_id, row.lang): row for row in self.questions}

    def examples(self) -> list[tuple[str, str, str]]:
        """(q_id, source_lang, target_lang) for every example, source rows included."""
        return [
            (q_id, self._rows[(q_id, langs[0])].source_lang, lang)
            for q_id, langs in self.targets.items()
            for lang in langs
        ]

    def question(self, q_id: str, lang: str) -> Question:
        """The question `q_id` in `lang`; KeyError naming both when the set has no such row."""
        try:
            return self._rows[(q_id, lang)]
        except KeyError:
            raise KeyError(f"the set {self.name!r} has no question {q_id!r} in {lang!r}") from None


def load_eclektic_set(path: str | Path, *, variant: Variant = "main", limit: int | None = None) -> EclekticSet:
    """Read an ECLEKTIC set from the released wide JSON lines or crossknow's item files (docs/eclektic.md,
    "Item files"). `limit` keeps the first N questions; the whole file is still read and
    checked, so every problem in it is reported.
    """
    if variant not in ("main", "popular"):
        raise ValueError(f"variant must be 'main' or 'popular', got {variant!r}")
    fmt = _item_format(path)
    if fmt == "eclektic":
        item_set = read_eclektic(path, required="all" if variant == "main" else "source")
        rows = [(None, item) for item in item_set.items]
        invalid = list(item_set.invalid)
        set_langs: tuple[str, ...] = LANGUAGES
    elif fmt in ("jsonl", "parquet"):
        rows, invalid = _own_items(path, fmt)
        set_langs = tuple(sorted({item.lang for _, item in rows}))
    else:
        raise InputError(
            path,
            f"an ECLEKTIC set is read from ECLEKTIC's JSON lines or crossknow's item files, not {fmt} "
            "(its items carry no pair_id and source_lang linking a question to its translations)",
        )
    questions, targets, problems = _group(path, rows, set_langs, check_missing=variant == "main" and fmt != "eclektic")
    invalid.extend(problems)
    if limit is not None:
        kept = set(list(targets)[:limit])
        targets = {q_id: langs for q_id, langs in targets.items() if q_id in kept}
        questions = [row for row in questions if row.q_id in kept]
    return EclekticSet(Path(path).stem, variant, questions, targets, invalid)


def _item_format(path: str | Path) -> str:
    """The item format of `path`; an AdaXEval interlingual.jsonl is refused, saying what to pass instead."""
    try:
        return detect_format(path)
    except InputError:
        first = next(iter_json_lines(path), None)
        if first is not None and InterlingualLink.model_fields.keys() <= first[1].keys():
            raise InputError(
                path,
                "an AdaXEval interlingual pairing links each item to a document in the partner language, "
                "not to a translated question; pass an item file whose question items in two languages "
                "share a pair_id and name their source_lang",
                line=first[0],
            ) from None
        raise


Row = tuple[int | None, QAItem | MCItem]
"""(line or Parquet row, item); no line for the released file, whose reader reports its own."""


def _own_items(path: str | Path, fmt: str) -> tuple[list[Row], list[InvalidRecord]]:
    lines: Iterator[Row]
    if fmt == "parquet":
        lines = enumerate(read_parquet(path).items, start=1)
    else:
        lines = ((line, build_item(record, path, line)) for line, record in iter_json_lines(path))
    rows: list[Row] = []
    invalid: list[InvalidRecord] = []
    for line, item in lines:
        if isinstance(item, MCItem) and item.kind != "question":
            reason = "a cloze item is not a question: ECLEKTIC asks closed-book questions"
            invalid.append(InvalidRecord(path=str(path), line=line, field="kind", reason=reason, item_id=item.id))
            continue
        for name in ("pair_id", "source_lang"):
            if getattr(item, name) is None:
                raise InputError(path, f"an ECLEKTIC question needs a {name}", line=line, field=name)
        rows.append((line, item))
    return rows, invalid


def _question(item: QAItem | MCItem) -> tuple[str, str]:
    if isinstance(item, MCItem):
        return item.prompt, item.options[item.answer]
    return item.question, item.answer


def _group(
    path: str | Path, rows: list[Row], set_langs: tuple[str, ...], check_missing: bool
) -> tuple[list[Question], dict[str, tuple[str, ...]], list[InvalidRecord]]:
    """Questions grouped by pair id: each needs its source-language row; `check_missing` reports
    a question that lacks a language of the set."""
    groups: dict[str, dict[str, Row]] = {}
    for line, item in rows:
        members = groups.setdefault(str(item.pair_id), {})
        first_line, first = next(iter(members.values()), (None, None))
        if first is not None and first.source_lang != item.source_lang:
            message = (
                f"pair {item.pair_id!r} has source_lang {item.source_lang!r} here but "
                f"{first.source_lang!r} on line {first_line}"
            )
            raise InputError(path, message, line=line, field="source_lang")
        if item.lang in members:
            first_of_lang = members[item.lang][0]
            message = f"a second {item.lang!r} question for pair {item.pair_id!r} (first on line {first_of_lang})"
            raise InputError(path, message, line=line, field="lang")
        members[item.lang] = (line, item)
    questions: list[Question] = []
    targets: dict[str, tuple[str, ...]] = {}
    invalid: list[InvalidRecord] = []
    for q_id, members in groups.items():
        line, first = next(iter(members.values()))
        source_lang = str(first.source_lang)
        if source_lang not in members:
            reason = f"no question in the source language {source_lang!r}: the question cannot be scored"
            invalid.append(InvalidRecord(path=str(path), line=line, field="source_lang", reason=reason, item_id=q_id))
            continue
        for lang in set_langs if check_missing else ():
            if lang not in members:
                reason = f"no {lang!r} question for pair {q_id!r} (missing, not filled in)"
                invalid.append(InvalidRecord(path=str(path), line=line, field="lang", reason=reason, item_id=q_id))
        source = members[source_lang][1]
        langs = tuple(lang for lang in set_langs if lang in members)
        targets[q_id] = (source_lang, *(lang for lang in langs if lang != source_lang))
        for lang in targets[q_id]:
            item = members[lang][1]
            text, answer = _question(item)
            questions.append(
                Question(
                    q_id=q_id,
                    lang=lang,
                    source_lang=source_lang,
                    question=text,
                    answer=answer,
                    context=getattr(item, "context", None),
                    title=title if isinstance(title := source.metadata.get("title"), str) else None,
                    source_context=getattr(source, "context", None),
                )
            )
    return questions, targets, invalid
