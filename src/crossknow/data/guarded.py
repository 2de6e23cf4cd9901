"""The one guarded way into a user's file: bounded size, strict UTF-8, bounded JSON and YAML.

Every reader of a user file reads its text with `read_text` or `iter_text_lines` and parses it with `parse_json` or
`parse_yaml`; each failure is an InputError naming the file, line and field where known. A byte-order mark is
dropped, a file of white space only is refused (unless `allow_empty`: crossknow's own logs), and every limit (the
`MAX_*` constants, 64-bit integers, no lone surrogate, no NaN or infinity in JSON) is checked before parsing.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Iterator
from itertools import count
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from crossknow.errors import InputError

MAX_FILE_BYTES = 32 * 1024 * 1024
"""The largest data file read whole (bytes): ten times the largest file of the Pitfalls release."""
MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest line of a JSON-lines file (bytes, without its newline)."""
MAX_TABLE_BYTES = 1024 * 1024
"""The largest hand-written YAML or JSON table: prices, prompts (bytes)."""
MAX_DEPTH = 100
"""The deepest nesting of lists and objects (mappings and sequences in YAML)."""
MAX_INT_DIGITS = sys.get_int_max_str_digits() or 4300
"""The most digits of an integer: Python's limit on converting text to int."""
MIN_INT, MAX_INT = -(2**63), 2**63 - 1
"""The range of an integer: a signed 64-bit integer."""

_QUOTE = ord('"')
_BRACKET_STEPS = np.zeros(256, np.int8)
_BRACKET_STEPS[[ord("["), ord("{")]] = 1
_BRACKET_STEPS[[ord("]"), ord("}")]] = -1
_SCAN_CHUNK = 1 << 20
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_YAML_SURROGATE_ESCAPE = re.compile(r"\\(u|U0000)[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_REFUSED_NUMBER = object()
"""What parse_json reads a number outside its limits as, before refusing it."""
_HEAD_BYTES = 4096
BOM = b"\xef\xbb\xbf"
"""The UTF-8 byte-order mark, dropped at the start of every file."""


def read_text(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The whole text of a UTF-8 file, refused before decoding when it is over `max_bytes`.

    A leading byte-order mark is dropped. Raises InputError for a file that cannot be read, is too
    large, is empty (white space only), or holds a byte that is not UTF-8 (naming its offset and line).
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise InputError(path, f"cannot read the file: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:
        raise InputError(path, f"the file is larger than {max_bytes:,} bytes, the most crossknow reads")
    body = data.removeprefix(BOM)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        skipped = len(data) - len(body)
        raise _not_utf8(path, exc, body.count(b"\n", 0, exc.start) + 1, skipped + exc.start) from None
    if not text.strip():
        raise _empty(path)
    return text


def read_head(path: str | Path, size: int = _HEAD_BYTES) -> bytes:
    """The first `size` bytes of a file, a byte-order mark dropped (fewer when the file is shorter), to tell its
    format before it is read whole; InputError for a file that cannot be read or is empty (white space only)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(BOM) + size).removeprefix(BOM)[:size]
            whole = not handle.read(1)
    except OSError as exc:
        raise InputError(path, f"cannot read the file: {exc.strerror or exc}") from exc
    if whole and not head.strip():
        raise _empty(path)
    return head


def first_char(path: str | Path) -> str:
    """The first character of a file that is not white space ('' when its first 4 KB hold none), telling a
    JSON list ('[') from JSON lines or an object ('{') before the file is read whole."""
    return read_head(path).lstrip()[:1].decode("ascii", "replace")


def iter_text_lines(
    path: str | Path, max_line_bytes: int = MAX_LINE_BYTES, *, allow_empty: bool = False
) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, line with its newline) for each line of a UTF-8 file.

    A byte-order mark at the start of the first line is dropped. A line is refused before decoding
    when it is over `max_line_bytes`; only that much of it is ever held. Raises InputError for a
    file that cannot be read, a line too long, or a byte that is not UTF-8 (naming its offset in the
    file and its line), and, once every line is read, for a file of white space only unless
    `allow_empty`.
    """
    blank = True
    try:
        with open(path, "rb") as handle:
            offset = 0
            for number in count(1):
                raw = handle.readline(max_line_bytes + 2 + (len(BOM) if number == 1 else 0))
                if number == 1 and raw.startswith(BOM):
                    offset, raw = len(BOM), raw[len(BOM) :]
                if not raw:
                    break
                if len(raw.removesuffix(b"\n").removesuffix(b"\r")) > max_line_bytes:
                    raise InputError(path, f"the line is longer than {max_line_bytes:,} bytes", line=number)
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise _not_utf8(path, exc, number, offset + exc.start) from None
                blank = blank and not line.strip()
                yield number, line
                offset += len(raw)
    except OSError as exc:
        raise InputError(path, f"cannot read the file: {exc.strerror or exc}") from exc
    if blank and not allow_empty:
        raise _empty(path)


def _empty(path: str | Path) -> InputError:
    return InputError(path, "the file is empty (nothing but white space)")


def _not_utf8(path: str | Path, exc: UnicodeDecodeError, line: int, offset: int) -> InputError:
    bad = exc.object[exc.start : exc.start + 1].hex()
    return InputError(path, f"byte {offset} (0x{bad}) is not UTF-8 text: {exc.reason}", line=line)


def parse_json(text: str, path: str | Path, line: int | None = None, field: str | None = None) -> Any:
    """The value of a JSON document, within the limits of this module.

    `line` is the document's line in its file (a JSON-lines record); without it, errors name the
    line within `text`. `field` names a document held in one field of a record (a Parquet
    column). Raises InputError naming `path`, the line, and the field where it is known.
    """
    if _too_deep(text):
        message = f"a value nested more than {MAX_DEPTH} deep (lists and objects)"
        raise InputError(path, message, line=line, field=field)
    numbers = _JsonNumbers()
    try:
        value = json.loads(
            text, parse_constant=numbers.constant, parse_int=numbers.integer, parse_float=numbers.real
        )
    except json.JSONDecodeError as exc:
        message = f"invalid JSON: {exc.msg} (column {exc.colno})"
        raise InputError(path, message, line=line or exc.lineno, field=field) from None
    if numbers.refused:
        literal, message = numbers.refused[0]
        found = _field_of(value, lambda item: item is _REFUSED_NUMBER, field or "")
        at = re.search(rf"(?<![\w.]){re.escape(literal)}(?![\w.])", text)
        where = line or (text.count("\n", 0, at.start()) + 1 if at else None)
        raise InputError(path, message, line=where, field=found or None)
    if _SURROGATE_ESCAPE.search(text):
        found = _field_of(value, _holds_surrogate, field or "")
        if found is not None:
            message = "a lone surrogate (a \\ud800-\\udfff escape without its pair) is no character"
            raise InputError(path, message, line=line, field=found or None)
    return value


class _JsonNumbers:
    """The number hooks of json.loads: each number outside this module's limits is read as _REFUSED_NUMBER
    and noted as (its text, why), for parse_json to refuse by field."""

    def __init__(self) -> None:
        self.refused: list[tuple[str, str]] = []

    def constant(self, name: str) -> object:
        """NaN, Infinity or -Infinity."""
        self.refused.append((name, f"{name} is no JSON number: a finite number is expected"))
        return _REFUSED_NUMBER

    def integer(self, literal: str) -> object:
        """An integer, refused past MAX_INT_DIGITS digits (before converting it) or outside the 64-bit range."""
        if len(literal) < 19:  # within the range whatever the digits
            return int(literal)
        if len(literal.lstrip("-")) > MAX_INT_DIGITS:
            self.refused.append((literal, f"an integer of more than {MAX_INT_DIGITS} digits"))
            return _REFUSED_NUMBER
        value = int(literal)
        if not MIN_INT <= value <= MAX_INT:
            self.refused.append((literal, f"{_shown_number(literal)} is outside the 64-bit integer range"))
            return _REFUSED_NUMBER
        return value

    def real(self, literal: str) -> object:
        """A number with a fraction or an exponent, refused when too large for a float."""
        value = float(literal)
        if not math.isfinite(value):
            self.refused.append((literal, f"{_shown_number(literal)} is too large for a number: a finite one is "
                                          "expected"))
            return _REFUSED_NUMBER
        return value


def _shown_number(literal: str) -> str:
    return literal if len(literal) <= 24 else f"{literal[:12]}... ({len(literal)} characters)"


def _too_deep(text: str) -> bool:
    """Whether lists and objects nest more than MAX_DEPTH deep, brackets inside strings not counted.

    Escaped backslashes and quotes are dropped first, so every quote left opens or closes a string;
    then brackets outside strings are counted with numpy a chunk at a time (a file of brackets is
    refused at its first chunk).
    """
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    unescaped = text.replace("\\\\", "").replace('\\"', "")
    codes = np.frombuffer(unescaped.encode("utf-8", "surrogatepass"), np.uint8)
    depth, quotes = 0, 0
    for start in range(0, len(codes), _SCAN_CHUNK):
        chunk = codes[start : start + _SCAN_CHUNK]
        seen = np.cumsum(chunk == _QUOTE, dtype=np.int64) + quotes
        levels = np.cumsum(_BRACKET_STEPS[chunk] * (seen % 2 == 0), dtype=np.int64) + depth
        if levels.max() > MAX_DEPTH:
            return True
        depth, quotes = int(levels[-1]), int(seen[-1])
    return False


def _holds_surrogate(value: Any) -> bool:
    return isinstance(value, str) and _SURROGATE.search(value) is not None


def _field_of(value: Any, bad: Callable[[Any], bool], field: str = "") -> str | None:
    """The field path ('' for the whole value) of the first value, or key, for which `bad` holds."""
    if bad(value):
        return field
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        name = f"{field}[{key}]" if isinstance(key, int) else f"{field}.{key}" if field else key
        if isinstance(key, str) and bad(key):
            return name
        found = _field_of(item, bad, name)
        if found is not None:
            return found
    return None


class _BoundedLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses nesting past MAX_DEPTH, and integers past MAX_INT_DIGITS or outside the 64-bit
    range."""

    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        """Compose one node, counting how deep it lies."""
        if self.depth >= MAX_DEPTH:
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(None, None, f"a value nested more than {MAX_DEPTH} deep", mark)
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        """An integer, refused when longer than MAX_INT_DIGITS or outside the 64-bit range."""
        if len(node.value) > MAX_INT_DIGITS:
            message = f"an integer of more than {MAX_INT_DIGITS} digits"
            raise yaml.constructor.ConstructorError(None, None, message, node.start_mark)
        value = super().construct_yaml_int(node)
        if not MIN_INT <= value <= MAX_INT:
            message = f"{_shown_number(node.value)} is outside the 64-bit integer range"
            raise yaml.constructor.ConstructorError(None, None, message, node.start_mark)
        return value


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_yaml_int)


def parse_yaml(text: str, path: str | Path) -> Any:
    """The value of a YAML document (safe types only), within the limits of this module.

    Raises InputError naming `path` and the line of the problem.
    """
    try:
        value = yaml.load(text, Loader=_BoundedLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(path, f"not valid YAML: {problem}", line=mark.line + 1 if mark else None) from None
    if _YAML_SURROGATE_ESCAPE.search(text):
        found = _field_of(value, _holds_surrogate)
        if found is not None:
            message = "a lone surrogate (a \\ud800-\\udfff escape without its pair) is no character"
            raise InputError(path, message, field=found or None)
    return value


def load_json(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> Any:
    """The value of the JSON file at `path` (`read_text`, then `parse_json`)."""
    return parse_json(read_text(path, max_bytes), path)


def load_yaml(path: str | Path, max_bytes: int = MAX_TABLE_BYTES) -> Any:
    """The value of the YAML file at `path` (`read_text`, then `parse_yaml`)."""
    return parse_yaml(read_text(path, max_bytes), path)


_INTEGER_TEXT = re.compile(r"[-+]?[0-9]{1,19}")


def parse_int(text: str) -> int | None:
    """The integer that a text field (a CSV cell) holds: ASCII digits after an optional sign, in the 64-bit
    range of parse_json and parse_yaml; None for any other text, so that the caller can name the field."""
    if not _INTEGER_TEXT.fullmatch(text):
        return None
    value = int(text)
    return value if MIN_INT <= value <= MAX_INT else None
