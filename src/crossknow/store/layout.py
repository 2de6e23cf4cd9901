"""A command's run-directory layout: which typed record tables it keeps, under which version, and how a directory of
an older version is brought up to this one.

`RunDir.open(layout=...)` calls `Layout.prepare` under the run's lock before it reads anything: a directory of an
older version is migrated in place, one written by a newer crossknow or by another command is refused by name, and
`layout.json` records the command, the version and each table's record type. A directory that holds a config but no
`layout.json` was written before crossknow recorded layouts: version 1.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel

from crossknow.errors import CrossknowError
from crossknow.store.atomic import atomic_write_json
from crossknow.store.record_table import RecordTable
from crossknow.store.run_dir import CONFIG_FILE, ShardedTable

LAYOUT_FILE = "layout.json"
STAGES_DIR = "stages"

R = TypeVar("R", bound=BaseModel)


@dataclass(frozen=True)
class Table(Generic[R]):
    """One record table of a layout: its stage name, its record type and the key of a record."""

    name: str
    record: type[R]
    key: Callable[[R], str]

    def open(self, run: Path) -> RecordTable[R]:
        """This table in run directory `run`."""
        return RecordTable(ShardedTable(run / STAGES_DIR / self.name), self.record, self.key)


@dataclass(frozen=True)
class Layout:
    """What one command keeps in its run directory."""

    command: str
    version: int
    tables: tuple[Table, ...]
    migrations: Mapping[int, Callable[[Path], None]] = field(default_factory=dict)
    """migrations[v] brings a directory of version v to version v + 1."""

    def prepare(self, run: Path) -> None:
        """Refuse another command's or a newer directory, migrate an older one, and record this layout."""
        version = self._found(run)
        if version is None:
            self._record(run)
            return
        if version > self.version:
            raise CrossknowError(f"{run} was written by a newer crossknow ({self.command} layout version {version}; "
                                 f"this one reads up to {self.version}); use another --out or upgrade crossknow")
        for step in range(version, self.version):
            if step not in self.migrations:
                raise CrossknowError(f"{run}: this crossknow cannot read a {self.command} run directory of layout "
                                     f"version {step}; use another --out")
            self.migrations[step](run)
        self._record(run)

    def _found(self, run: Path) -> int | None:
        """The version of the layout in `run` (None: a new directory)."""
        path = run / LAYOUT_FILE
        if not path.exists():
            return 1 if (run / CONFIG_FILE).exists() else None
        recorded = json.loads(path.read_text(encoding="utf-8"))
        if recorded.get("command") != self.command:
            raise CrossknowError(f"{run} holds a {recorded.get('command')} run, not a {self.command} run; "
                                 "use another --out")
        return int(recorded["version"])

    def _record(self, run: Path) -> None:
        tables = {table.name: f"{table.record.__module__}.{table.record.__qualname__}" for table in self.tables}
        record = {"command": self.command, "version": self.version, "tables": tables}
        path = run / LAYOUT_FILE
        if not path.exists() or json.loads(path.read_text(encoding="utf-8")) != record:
            atomic_write_json(path, record)
