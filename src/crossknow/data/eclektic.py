"""ECLEKTIC's released JSON lines: one question a line, translated into 12 languages (wide).

Fields: `q_id`, `original_lang`, `title`, `url`, `content`, `question`, `answer`, and `{L}_q`, `{L}_a`, `{L}_c` for
each language L. Each (question, language) with a non-empty question and answer becomes a QAItem f"{q_id}:{L}", with
pair_id str(q_id). Which absent languages are reported is the caller's choice (`required`): the main set has every
question in all 12 languages, the popular-pages variant only in some (section 5).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from crossknow.data.jsonl import iter_json_lines, require, validation_problem
from crossknow.data.schemas import InvalidRecord, ItemSet, QAItem
from crossknow.errors import InputError

FORMAT = "eclektic"

LANGUAGES = ("de", "en", "es", "fr", "he", "hi", "id", "it", "ja", "ko", "pt", "zh")
"""The languages of ECLEKTIC, in the order of its columns."""

Required = Literal["none", "source", "all"]
"""Which absent languages `read_eclektic` reports: none, the row's source language, or all of LANGUAGES."""


def is_eclektic(record: dict[str, Any]) -> bool:
    """Whether a record looks like an ECLEKTIC row (it has `q_id` and `original_lang`)."""
    return "q_id" in record and "original_lang" in record


def read_eclektic(path: str | Path, limit: int | None = None, *, required: Required = "none") -> ItemSet:
    """Read ECLEKTIC's JSON lines: one QAItem per (question, language) present.

    A language whose question and answer are both missing or empty is absent, and reported as an
    InvalidRecord (never filled in) when `required` asks for it: "all" reports every absent
    language of LANGUAGES; "source" and "all" report a row whose source language (original_lang)
    has no usable question and answer, and drop the row's items, since none can be scored without
    it. One with a question but no answer (or the reverse) is reported as an InvalidRecord, as are
    a row with no language at all and a repeated q_id. A malformed row (a missing q_id or
    original_lang, a field of the wrong type) raises InputError naming the line and field.
    `limit` keeps the first N items.
    """
    items: list[QAItem] = []
    invalid: list[InvalidRecord] = []
    first_line: dict[str, int] = {}
    for line_no, record in iter_json_lines(path):
        if limit is not None and len(items) >= limit:
            break
        q_id = str(require(record, "q_id", (str, int), path, line_no))
        if q_id in first_line:
            reason = f"duplicate q_id {q_id!r}, first used on line {first_line[q_id]}"
            invalid.append(InvalidRecord(path=str(path), line=line_no, field="q_id", reason=reason))
            continue
        first_line[q_id] = line_no
        new_items, problems = _row_items(record, path, line_no, q_id, required)
        items.extend(new_items)
        invalid.extend(problems)
    return ItemSet(name=Path(path).stem, format=FORMAT, items=items[:limit], invalid=invalid)


def row_items(
    record: dict[str, Any], path: str | Path, line: int, required: Required = "none"
) -> tuple[list[QAItem], list[InvalidRecord]]:
    """The items of one row and its problems, as `read_eclektic` reads them (for a writer to check a row
    before writing it); InputError naming `path`, `line` and the field for a malformed row."""
    q_id = str(require(record, "q_id", (str, int), path, line))
    return _row_items(record, path, line, q_id, required)


def _qa_item(fields: dict[str, Any], path: str | Path, line: int) -> QAItem:
    """The QAItem of one language of a row; InputError naming the field as the file spells it."""
    try:
        return QAItem(**fields)
    except ValidationError as exc:
        field, message = validation_problem(exc)
        lang = fields["lang"]
        in_file = {"id": "q_id", "pair_id": "q_id", "source_lang": "original_lang", "question": f"{lang}_q",
                   "answer": f"{lang}_a", "context": f"{lang}_c"}
        raise InputError(path, message, line=line, field=in_file.get(field or "", field)) from None


def _row_items(
    record: dict[str, Any], path: str | Path, line: int, q_id: str, required: Required
) -> tuple[list[QAItem], list[InvalidRecord]]:
    original_lang = require(record, "original_lang", str, path, line)
    metadata = {
        key: require(record, key, str, path, line, optional=True) for key in ("title", "url")
    }
    items: list[QAItem] = []
    invalid: list[InvalidRecord] = []
    for lang in LANGUAGES:
        question, answer, context = (
            require(record, f"{lang}_{suffix}", str, path, line, optional=True) for suffix in "qac"
        )
        has_question, has_answer = (
            bool(question and question.strip()),
            bool(answer and answer.strip()),
        )
        if not (has_question or has_answer):
            if required == "all":
                reason = f"the {lang} question and answer are missing (not filled in)"
                invalid.append(InvalidRecord(path=str(path), line=line, field=f"{lang}_q", reason=reason))
            continue
        if has_question != has_answer:
            present, missing = ("question", "answer") if has_question else ("answer", "question")
            reason = f"the {lang} {present} has no {missing}: it cannot be judged"
            invalid.append(
                InvalidRecord(
                    path=str(path), line=line, field=f"{lang}_{missing[0]}", reason=reason
                )
            )
            continue
        fields = {"id": f"{q_id}:{lang}", "lang": lang, "question": question, "answer": answer,
                  "context": context or None, "source_lang": original_lang, "pair_id": q_id,
                  "metadata": dict(metadata)}
        items.append(_qa_item(fields, path, line))
    if not items and not invalid:
        reason = "no language has a question and an answer"
        invalid.append(
            InvalidRecord(path=str(path), line=line, field=f"{original_lang}_q", reason=reason)
        )
    elif required != "none" and not any(item.lang == original_lang for item in items):
        reason = (
            f"the source language {original_lang!r} has no usable question and answer: "
            "the question cannot be scored in any language"
        )
        invalid.append(
            InvalidRecord(path=str(path), line=line, field=f"{original_lang}_q", reason=reason)
        )
        items = []
    return items, invalid
