"""One entry point for every item file: `load_item_set(path)` detects the format and reads it.

Formats: crossknow's own `jsonl` and `parquet`, `adaxeval` (the release and its paper-examples variant), `pitfalls`
(the Cross-Lingual Pitfalls `<Language>.json` pair files) and `eclektic` (ECLEKTIC's released JSON lines), each read
by the module of that name in `crossknow.data`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crossknow.data.adaxeval import read_adaxeval
from crossknow.data.eclektic import is_eclektic, read_eclektic
from crossknow.data.guarded import first_char, load_json
from crossknow.data.jsonl import iter_json_lines, read_jsonl
from crossknow.data.parquet import read_parquet
from crossknow.data.pitfalls import read_pitfalls
from crossknow.data.schemas import ItemSet
from crossknow.errors import InputError

FORMATS = ("jsonl", "parquet", "adaxeval", "pitfalls", "eclektic")
"""The names `load_item_set` accepts as `fmt`, besides 'auto'."""

_KNOWN = (
    "known formats: jsonl (ours: id, lang, answer, and options+kind or question), parquet (ours), "
    "adaxeval (answer_idx with question or cloze), "
    "pitfalls (a JSON list of pairs with transquestion), "
    "eclektic (q_id and original_lang)"
)


def detect_format(path: str | Path) -> str:
    """The format of an item file, told by its extension (.parquet) or its first record.

    A file starting with '[' is a JSON list (pitfalls when its first object has
    `transquestion`); one starting with '{' is JSON lines, told by its first object's keys (or a
    single JSON object, told the same way).
    Raises InputError naming the known formats when none fits.
    """
    path = Path(path)
    if path.suffix == ".parquet":
        return "parquet"
    head = first_char(path)
    if head == "[":
        data = load_json(path)
        if data and isinstance(data[0], dict) and "transquestion" in data[0]:
            return "pitfalls"
        raise InputError(path, f"a JSON list whose first element has no 'transquestion'; {_KNOWN}")
    if head == "{":
        try:
            line, first = next(iter_json_lines(path))
        except InputError as line_error:  # not JSON lines: perhaps one JSON object over several lines
            line, first = None, _one_object(path, line_error)
        fmt = _jsonl_format(first)
        if fmt is None:
            keys = ", ".join(sorted(first)[:12])
            raise InputError(
                path, f"cannot tell the format from the keys ({keys}); {_KNOWN}", line=line
            )
        return fmt
    raise InputError(path, f"neither JSON lines nor a JSON list; {_KNOWN}")


def load_item_set(
    path: str | Path, fmt: str = "auto", lang: str | None = None, limit: int | None = None
) -> ItemSet:
    """Read an item file in format `fmt` ('auto' detects it; see FORMATS).

    `lang` is the language of AdaXEval release records, which carry none (without it the
    language is detected from the script); the other formats record their language, and asking
    for one there is an InputError. `limit` keeps the first N usable items (for pitfalls the
    first N pairs, 2N items).
    """
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt not in FORMATS:
        raise InputError(path, f"unknown format {fmt!r}; {_KNOWN}")
    if lang is not None and fmt != "adaxeval":
        raise InputError(
            path, f"a language can only be given for AdaXEval files; {fmt} files record their own"
        )
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    if fmt == "adaxeval":
        return read_adaxeval(path, lang=lang, limit=limit)
    readers = {
        "jsonl": read_jsonl,
        "parquet": read_parquet,
        "pitfalls": read_pitfalls,
        "eclektic": read_eclektic,
    }
    return readers[fmt](path, limit=limit)


def _jsonl_format(record: dict[str, Any]) -> str | None:
    if is_eclektic(record):
        return "eclektic"
    if "answer_idx" in record and ("question" in record or "cloze" in record):
        return "adaxeval"
    ours = {"id", "lang", "answer"} <= record.keys()
    if ours and ({"options", "kind"} <= record.keys() or "question" in record):
        return "jsonl"
    return None


def _one_object(path: Path, line_error: InputError) -> dict[str, Any]:
    """The file read as one JSON object; when it is none, the first line's error stands."""
    try:
        return load_json(path)
    except InputError:
        raise line_error from None

