"""What a run has paid for, over all its invocations: the `SpendLedger` in its run directory.

The request cache replays for free what a killed invocation paid, so no invocation's meter tells what the whole run
spent. A client records every request it sends here before its answer is cached; the run's spend is the sum of the
records, each counted once by its cache key (a record without one counts every time), so that a killed and resumed
run reports what an uninterrupted one would; `sent` tells one invocation's share (docs/scoring.md).
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from crossknow.store.run_dir import ShardedTable

SPEND_DIR = "spend"
"""The ledger's folder in a run directory."""

SCHEMA = pa.schema([
    ("key", pa.string()),
    ("invocation", pa.string()),
    ("stage", pa.string()),
    ("label", pa.string()),
    ("prompt_tokens", pa.int64()),
    ("completion_tokens", pa.int64()),
    ("cost_usd", pa.float64()),
])
"""One row per request sent: its cache key (null: counted every time), the invocation that sent it, the stage
and label the command gave, and what it cost."""


@dataclass(frozen=True)
class Paid:
    """One request a client sent to its backend."""

    key: str | None
    """Its request-cache key; None for a request whose answer nothing can replay (failed, or no cache)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True)
class SpendTotal:
    """Requests, tokens and cost summed over ledger rows."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens


class SpendLedger:
    """The spend records of the run directory `run_dir`, written by this invocation and read over all of them."""

    def __init__(self, run_dir: str | Path):
        self.table = ShardedTable(Path(run_dir) / SPEND_DIR)
        self.invocation = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        """This invocation's id, on every row it writes."""
        self.started = time.monotonic()
        """When this invocation opened the ledger (monotonic clock)."""
        self.stage = ""
        """The stage the rows written now belong to (set by the command, see `during`)."""
        self._lock = threading.Lock()

    @contextmanager
    def during(self, stage: str) -> Iterator[None]:
        """Label the rows written inside the block with `stage` (the previous stage afterwards)."""
        previous, self.stage = self.stage, stage
        try:
            yield
        finally:
            self.stage = previous

    def record(self, label: str, paid: Sequence[Paid]) -> None:
        """Commit the requests `paid` (sent by a client labelled `label`) as one shard; nothing when empty."""
        if not paid:
            return
        rows = [{"key": p.key, "invocation": self.invocation, "stage": self.stage, "label": label,
                 "prompt_tokens": p.prompt_tokens, "completion_tokens": p.completion_tokens, "cost_usd": p.cost_usd}
                for p in paid]
        with self._lock:
            self.table.append(pa.Table.from_pylist(rows, schema=SCHEMA), [p.key for p in paid if p.key is not None])

    def rows(self) -> list[dict]:
        """Every row committed by any invocation, in commit order."""
        return self.table.read(SCHEMA).to_pylist()

    def counted(self) -> list[dict]:
        """The rows the run's spend counts: the first row of each key, and every row without one."""
        seen: set[str] = set()
        kept = []
        for row in self.rows():
            if row["key"] is not None:
                if row["key"] in seen:
                    continue
                seen.add(row["key"])
            kept.append(row)
        return kept

    def total(self, stage: str | None = None, labels: Sequence[str] | None = None) -> SpendTotal:
        """What the whole run spent (each request once, see the module docstring), in `stage` and of clients
        labelled one of `labels` where given."""
        return total_of([r for r in self.counted() if (stage is None or r["stage"] == stage)
                         and (labels is None or r["label"] in labels)])

    def sent(self, invocation: str | None = None) -> SpendTotal:
        """What one invocation (this one by default) sent, every request it sent counted."""
        invocation = invocation or self.invocation
        return total_of([r for r in self.rows() if r["invocation"] == invocation])


def total_of(rows: Sequence[dict]) -> SpendTotal:
    """The sums of ledger rows."""
    return SpendTotal(calls=len(rows), prompt_tokens=sum(r["prompt_tokens"] for r in rows),
                      completion_tokens=sum(r["completion_tokens"] for r in rows),
                      cost_usd=sum(r["cost_usd"] for r in rows))
