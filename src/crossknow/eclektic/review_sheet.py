"""The review sheet of a built set: a CSV for the human verification the paper made, and its import.

`export_sheet` writes one row per question and language, source first: the texts, the pivot check's scores and flag,
and empty columns for the reviewer (the paper's three criteria on the source row; `approved`, `fixed_question`,
`fixed_answer` on every row). `import_sheet` writes the released wide format; a rejected row, or a "no" on a
criterion, drops the whole question, as the paper discards untranslatable examples (docs/eclektic.md).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossknow.data.eclektic import LANGUAGES, row_items
from crossknow.data.guarded import read_text
from crossknow.eclektic.build_records import BuiltQuestion
from crossknow.errors import InputError
from crossknow.store.atomic import atomic_write, atomic_write_text

SHEET_COLUMNS = (
    "q_id", "original_lang", "lang", "title", "url", "question", "answer", "context",
    "pivot_lang", "back_question", "back_answer", "back_context", "chrf_question", "chrf_answer", "chrf_context",
    "flagged", "problems", "closed_book", "language_specific", "self_contained", "approved", "fixed_question",
    "fixed_answer",
)
"""The sheet's columns, in order."""
CRITERIA = ("closed_book", "language_specific", "self_contained")
"""The paper's three validation criteria, answered yes/no on each approved source row."""
REQUIRED_COLUMNS = ("q_id", "original_lang", "lang", "title", "url", "question", "answer", "context", *CRITERIA,
                    "approved", "fixed_question", "fixed_answer")
"""The columns `import_sheet` reads (the others are there for the reviewer and may be deleted)."""
YES, NO = frozenset({"yes", "y", "true", "1"}), frozenset({"no", "n", "false", "0"})
BOM = "\ufeff"


def export_sheet(questions: Iterable[BuiltQuestion], path: str | Path) -> Path:
    """Write the review sheet of `questions` to `path`, atomically; returns the path."""
    rows: list[dict[str, Any]] = []
    for q in questions:
        common = {"q_id": q.q_id, "original_lang": q.original_lang, "title": q.title, "url": q.url or ""}
        rows.append(common | {"lang": q.original_lang, **q.source.model_dump()})
        for lang in sorted(q.translations, key=LANGUAGES.index):
            translation = q.translations[lang]
            texts, pivot = translation.texts, translation.pivot
            missing = [f"translation of the {f}" for f, v in texts.model_dump().items() if v is None]
            missing += [f"back-translation of the {f}" for f, v in pivot.back.model_dump().items()
                        if v is None and getattr(texts, f) is not None]
            rows.append(common | {
                "lang": lang, **{k: v or "" for k, v in texts.model_dump().items()},
                "pivot_lang": pivot.pivot_lang, **{f"back_{k}": v or "" for k, v in pivot.back.model_dump().items()},
                **{f"chrf_{k}": "" if v is None else f"{v:.4f}" for k, v in pivot.scores.items()},
                "flagged": "yes" if pivot.flagged else "no",
                "problems": "; ".join(f"no valid {m}" for m in missing),
            })

    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=SHEET_COLUMNS, restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return atomic_write_text(path, BOM + text.getvalue())


@dataclass
class ImportSummary:
    """What `import_sheet` kept and dropped."""

    out: Path
    """The released-format file written."""
    questions: int = 0
    """Questions written."""
    rows: int = 0
    """(question, language) rows written, source rows included."""
    dropped: dict[str, str] = field(default_factory=dict)
    """q_id -> why the question was dropped (its source row rejected, a criterion not met, or a
    translation rejected)."""


def import_sheet(path: str | Path, out: str | Path) -> ImportSummary:
    """Read a reviewed sheet and write the released wide JSON lines to `out`, atomically."""
    summary = ImportSummary(out=Path(out))
    records: dict[str, dict[str, Any]] = {}
    rows = list(_rows(path))
    sources = {row["q_id"]: (line, row) for line, row in rows if row["lang"] == row["original_lang"]}
    source_lines = {q_id: line for q_id, (line, _) in sources.items()}
    for line, row in rows:
        q_id = row["q_id"]
        if q_id not in sources:
            raise InputError(path, f"question {q_id!r} has no row in its source language {row['original_lang']!r}",
                             line=line, field="lang")
        source_line, source = sources[q_id]
        for name in ("original_lang", "title", "url"):
            if row[name] != source[name]:
                raise InputError(path, f"{row[name]!r} differs from {source[name]!r} on the source row (line "
                                       f"{source_line})", line=line, field=name)
    for line, row in sorted(rows, key=lambda pair: pair[1]["lang"] != pair[1]["original_lang"]):  # sources first
        q_id = row["q_id"]
        if q_id in summary.dropped:  # the rows of a dropped question need no review
            continue
        reason = _rejection(row, path, line, is_source=row["lang"] == row["original_lang"])
        if reason:
            summary.dropped[q_id] = reason
    for line, row in rows:
        q_id, lang = row["q_id"], row["lang"]
        if q_id in summary.dropped:
            continue
        question, answer = row["fixed_question"] or row["question"], row["fixed_answer"] or row["answer"]
        for name, value in (("question", question), ("answer", answer), ("context", row["context"])):
            if not value.strip():
                raise InputError(path, f"an approved row needs a {name}", line=line, field=name)
        record = records.setdefault(q_id, {key: None for key in ("q_id", "original_lang", "title", "url", "content",
                                                                  "question", "answer")})
        if lang == row["original_lang"]:
            record.update(q_id=q_id, original_lang=lang, title=row["title"], url=row["url"] or None,
                          content=row["context"], question=question, answer=answer)
        record.update({f"{lang}_q": question, f"{lang}_a": answer, f"{lang}_c": row["context"]})
        summary.rows += 1
    summary.questions = len(records)
    for q_id, record in records.items():  # never write a set that read_eclektic refuses
        _, problems = row_items(record, path, source_lines[q_id], required="source")
        if problems:
            raise InputError(path, problems[0].reason, line=source_lines[q_id], field=problems[0].field)
    lines = [json.dumps(record, ensure_ascii=False) + "\n" for record in records.values()]
    atomic_write(out, lambda handle: handle.writelines(lines))
    return summary


def _rows(path: str | Path) -> Iterator[tuple[int, dict[str, str]]]:
    """(first line of the record, its cells) for every record of the sheet (read through
    `crossknow.data.guarded`), checked for shape."""
    reader = csv.DictReader(io.StringIO(read_text(path), newline=""))
    try:
        missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise InputError(path, "the header lacks this column", line=1, field=missing[0])
        seen: dict[tuple[str, str], int] = {}
        start = reader.line_num + 1
        for row in reader:
            cells = {c: _cell(row.get(c)) for c in REQUIRED_COLUMNS}
            _check_row(cells, path, start, seen)
            yield start, cells
            start = reader.line_num + 1
    except csv.Error as error:
        raise InputError(path, f"not a readable CSV file: {error}", line=reader.line_num) from None


def _cell(value: str | list[str] | None) -> str:
    """A cell's text, stripped ('' for a missing one; the cells past the header of a row too long, which
    csv gives as a list, are not read)."""
    return value.strip() if isinstance(value, str) else ""


def _check_row(cells: dict[str, str], path: str | Path, line: int, seen: dict[tuple[str, str], int]) -> None:
    for name in ("q_id", "original_lang", "lang"):
        if not cells[name]:
            raise InputError(path, "missing (required)", line=line, field=name)
    for name in ("original_lang", "lang"):
        if cells[name] not in LANGUAGES:
            raise InputError(path, f"{cells[name]!r} is not one of {', '.join(LANGUAGES)}", line=line, field=name)
    key = (cells["q_id"], cells["lang"])
    if key in seen:
        raise InputError(path, f"a second {key[1]!r} row for question {key[0]!r} (the first is on line "
                               f"{seen[key]})", line=line, field="lang")
    seen[key] = line


def _rejection(row: dict[str, str], path: str | Path, line: int, is_source: bool) -> str | None:
    """Why the review rejects this row's question (None: it does not): the row not approved, or, on the
    source row, a criterion answered no."""
    if not _yes(row, "approved", path, line):
        return "its source row was rejected" if is_source else f"its {row['lang']} translation was rejected"
    failed = [name for name in CRITERIA if is_source and not _yes(row, name, path, line)]
    return f"it fails the criterion {failed[0]}" if failed else None


def _yes(row: dict[str, str], column: str, path: str | Path, line: int) -> bool:
    value = row[column].lower()
    if value in YES or value in NO:
        return value in YES
    shown = f"found {row[column]!r}" if value else "the row is not reviewed yet"
    raise InputError(path, f"must be yes or no ({shown})", line=line, field=column)
