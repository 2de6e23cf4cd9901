"""Records a Python caller holds (a list of dicts, a DataFrame), written as JSON lines for the command's own reader,
so that records from memory are checked exactly as a file's are."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from crossknow.errors import CrossknowError

RECORDS_FILE = "items.jsonl"
"""The file records from memory are written to, in the run directory."""


def records_file(items: Any, directory: Path, name: str = RECORDS_FILE) -> str:
    """The path the reader reads: `items` itself when it is a path, else the records written to `directory`/`name`
    (a DataFrame's missing values as null)."""
    if isinstance(items, str | Path):
        return str(items)
    path = Path(directory) / name
    if hasattr(items, "to_json"):  # a DataFrame
        path.write_text(items.to_json(orient="records", lines=True, force_ascii=False), encoding="utf-8")
        return str(path)
    records = list(items)
    if not all(isinstance(record, Mapping) for record in records):
        raise CrossknowError(f"{Path(name).stem}: give a file path, a list of dicts (one record each) or a DataFrame")
    path.write_text("".join(json.dumps(dict(record), ensure_ascii=False) + "\n" for record in records),
                    encoding="utf-8")
    return str(path)
