"""crossknow's own JSON-lines files of items, and the helpers every reader and writer shares.

One item a line: a line with `options` is an MCItem, any other a QAItem. Reading validates every
line and stops at the first malformed one with an InputError naming the file, line and field.
Writing is atomic: a temporary file in the same directory, then a rename.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from crossknow.data.guarded import MAX_FILE_BYTES, iter_text_lines, load_json, parse_json
from crossknow.data.schemas import BLANK, InvalidRecord, ItemSet, MCItem, QAItem, Record
from crossknow.errors import InputError
from crossknow.store.atomic import atomic_write

Item = MCItem | QAItem
"""Any item crossknow scores or judges."""

FORMAT = "jsonl"
R = TypeVar("R", bound=Record)

# Model-level validators of MCItem report no location; these words in their message name the field.
_MESSAGE_FIELDS = (
    ("answer index", "answer"), ("option", "options"), ("choice", "choices"), (BLANK, "prompt"),
    ("the text is empty", "text"), ("token_ids:", "token_ids"), ("level ", "level"), ("takes no x", "x"),
    ("takes no y", "y"), ("takes no a", "a"), ("partner_lang", "partner_lang"),
)
_JSON_TYPE_NAMES: dict[type, str] = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
    list: "a list",
    dict: "an object",
}


def iter_json_lines(path: str | Path, *, allow_empty: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (1-based line number, object) for each non-blank line of a JSON-lines file.

    Lines are read and parsed through `crossknow.data.guarded`: InputError for a file that cannot
    be read, a line that is too long, not UTF-8, not valid JSON (within its limits) or not a JSON
    object, and for an empty file unless `allow_empty` (crossknow's own append-only logs).
    """
    for line_no, line in iter_text_lines(path, allow_empty=allow_empty):
        if line.strip():
            yield line_no, _json_object(line, path, line_no)


def _json_object(line: str, path: str | Path, line_no: int) -> dict[str, Any]:
    record = parse_json(line, path, line_no)
    if not isinstance(record, dict):
        message = f"expected a JSON object, found {type(record).__name__}"
        raise InputError(path, message, line=line_no)
    return record


def validation_problem(exc: ValidationError) -> tuple[str | None, str]:
    """The field (a path such as 'options[2]') and message of a pydantic error's first problem."""
    error = exc.errors()[0]
    message = error["msg"].removeprefix("Value error, ")
    field = ""
    for part in error["loc"]:
        field += f"[{part}]" if isinstance(part, int) else (f".{part}" if field else str(part))
    if error["type"] == "value_error" and isinstance(error.get("input"), dict):  # a model's own check
        named = next((name for words, name in _MESSAGE_FIELDS if words in message), "")
        field = f"{field}.{named}" if field and named else field or named
    return field or None, message


def require(
    record: dict[str, Any],
    field: str,
    expected: type | tuple[type, ...],
    path: str | Path,
    line: int | None,
    *,
    optional: bool = False,
) -> Any:
    """The value of `record[field]`, checked to be of the `expected` type(s) (bool never counts as
    int). A missing or null field is None when `optional`, else an InputError; so is a wrong type.
    """
    value = record.get(field)
    if value is None:
        if optional:
            return None
        raise InputError(path, "missing (required)", line=line, field=field)
    allowed = expected if isinstance(expected, tuple) else (expected,)
    if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
        names = " or ".join(_JSON_TYPE_NAMES.get(kind, kind.__name__) for kind in allowed)
        found = _JSON_TYPE_NAMES.get(type(value), type(value).__name__)
        raise InputError(
            path, f"expected {names}, found {found} {_short(value)}", line=line, field=field
        )
    return value


def require_strings(
    record: dict[str, Any], field: str, path: str | Path, line: int | None
) -> list[str]:
    """`record[field]` checked to be a list of strings; InputError naming the element otherwise."""
    values = require(record, field, list, path, line)
    for index, value in enumerate(values):
        if not isinstance(value, str):
            found = _JSON_TYPE_NAMES.get(type(value), type(value).__name__)
            raise InputError(
                path,
                f"expected a string, found {found} {_short(value)}",
                line=line,
                field=f"{field}[{index}]",
            )
    return values


def mc_item_or_problem(
    fields: dict[str, Any], renames: dict[str, str]
) -> MCItem | tuple[str | None, str]:
    """Build an MCItem from `fields`, or say why it cannot be scored as (field, reason).

    The field is named as in the source format through `renames` (e.g. {'answer': 'answer_idx'});
    a whitespace-only prompt or option counts as empty.
    """
    if not fields.get("prompt", "").strip():
        return renames.get("prompt", "prompt"), "the prompt is empty"
    try:
        return MCItem(**fields)
    except ValidationError as exc:
        field, message = validation_problem(exc)
        if field is not None:
            head = re.split(r"[.\[]", field, maxsplit=1)[0]
            field = renames.get(head, head) + field[len(head) :]
        return field, message


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return f"({text[:60]}...)" if len(text) > 60 else f"({text})"


def build_item(
    record: dict[str, Any],
    path: str | Path,
    line: int | None,
    model: type[MCItem | QAItem] | None = None,
) -> Item:
    """Validate one record of our own format as `model`; by default an MCItem when it has
    `options`, else a QAItem. Raises InputError naming path, line and the offending field.
    """
    model = model or (MCItem if "options" in record else QAItem)
    try:
        return model.model_validate(record)
    except ValidationError as exc:
        field, message = validation_problem(exc)
        raise InputError(path, f"{message} (as {model.__name__})", line=line, field=field) from exc


def note_unique_id(first_line: dict[str, int], item_id: str, path: str | Path, line: int) -> None:
    """Record that `item_id` is on `line` in `first_line` (id -> line); InputError naming both lines when the
    id was seen before (every reader of our item files refuses a repeated id the same way)."""
    if item_id in first_line:
        message = f"duplicate id {item_id!r}, first used on line {first_line[item_id]}"
        raise InputError(path, message, line=line, field="id")
    first_line[item_id] = line


def read_json_record(path: str | Path, model: type[R], max_bytes: int = MAX_FILE_BYTES) -> R:
    """A JSON file holding one record (a run's sources.json, a summary), validated as `model`; InputError
    naming the file and the field for a file that cannot be read, is not JSON or is not such a record."""
    data = load_json(path, max_bytes)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        field, message = validation_problem(exc)
        raise InputError(path, f"{message} (as {model.__name__})", field=field) from None


def read_jsonl(path: str | Path, limit: int | None = None) -> ItemSet:
    """Read our JSON-lines file of items; `limit` keeps the first N.

    Raises InputError for invalid JSON, a record that fails validation, or an id seen before in
    the file (naming the line of the second occurrence).
    """
    items: list[Item] = []
    first_line: dict[str, int] = {}
    for line_no, record in iter_json_lines(path):
        if limit is not None and len(items) >= limit:
            break
        item = build_item(record, path, line_no)
        note_unique_id(first_line, item.id, path, line_no)
        items.append(item)
    return ItemSet(name=Path(path).stem, format=FORMAT, items=items)


def item_json(item: Record) -> str:
    """One item (or any record) as a compact JSON line (without the newline), non-ASCII text kept as is."""
    return json.dumps(item.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))


def write_jsonl(path: str | Path, items: Iterable[Record]) -> Path:
    """Write items (or any records) as JSON lines, atomically; returns the path written."""
    lines = [item_json(item) + "\n" for item in items]
    return atomic_write(path, lambda handle: handle.writelines(lines))


def write_invalid(path: str | Path, records: Iterable[InvalidRecord]) -> Path:
    """Write invalid.jsonl: one InvalidRecord a line, atomically (an empty file when there is none)."""
    lines = [json.dumps(record.model_dump(), ensure_ascii=False) + "\n" for record in records]
    return atomic_write(path, lambda handle: handle.writelines(lines))
