"""The one scoring stage: every option of every item, scored, committed and resumable.

`crossknow evaluate` (one model) and `crossknow trace` (a sweep of checkpoints) both run it. The
whole work list of one model (all sets, all items) is sorted by length, longest first, before it is
cut into chunks; each chunk goes to the scorer in one call (the backend batches it by
`batch_size`) and is committed as one shard, so a killed run loses at most one chunk.

An item that cannot be scored (the backend raises `UnscorableRequest`: too long for the model, a
tokeniser merge across the boundary; or a loss that is not a finite number) is committed to the
`unscorable` stage with its reason, and the run goes on; it is decided, so a resumed run does not
try it again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from crossknow.data.schemas import InvalidRecord, MCItem
from crossknow.errors import UnscorableRequest
from crossknow.models.protocol import Scorer, ScoreResult
from crossknow.scoring.normalise import option_loss
from crossknow.scoring.rules import PRIMARY_NORMALISATION, Rule, option_requests
from crossknow.store.run_dir import RunDir

SCORES_SCHEMA = pa.schema(
    [
        pa.field("step", pa.int64(), metadata={"doc": "Training step of the checkpoint; null for one model."}),
        pa.field("checkpoint", pa.string(), metadata={"doc": "The checkpoint's label; null for one model."}),
        pa.field("set", pa.string(), metadata={"doc": "Evaluation set (the data file's stem)."}),
        pa.field("condition", pa.string(), metadata={"doc": "Trace condition (memorisation, ...); null in evaluate."}),
        pa.field("item_id", pa.string(), metadata={"doc": "Item id, unique within its set."}),
        pa.field("pair_id", pa.string(), metadata={"doc": "Shared by translations of one item."}),
        pa.field("lang", pa.string(), metadata={"doc": "Language of the item."}),
        pa.field("kind", pa.string(), metadata={"doc": "cloze or question."}),
        pa.field("option_index", pa.int32(), metadata={"doc": "Position of the option in the item."}),
        pa.field("is_answer", pa.bool_(), metadata={"doc": "Whether this option is the item's answer."}),
        pa.field("logprob_sum", pa.float64(), metadata={"doc": "Summed log-probability of the scored continuation."}),
        pa.field("n_tokens", pa.int32(), metadata={"doc": "Continuation tokens scored."}),
        pa.field("n_chars", pa.int32(), metadata={"doc": "Characters of the rule's norm_text (acc_norm's length)."}),
        pa.field("n_bytes", pa.int32(), metadata={"doc": "UTF-8 bytes of the rule's norm_text."}),
        pa.field("greedy", pa.bool_(), metadata={"doc": "Greedy decoding from the context gives this continuation."}),
        pa.field("loss", pa.float64(), metadata={"doc": "The rule's primary loss: mean token CE (adaxeval), -sum "
                                                         "(lm-eval); the other normalisations come from the counts."}),
    ]
)
"""scores.parquet (evaluate) and trace.parquet (trace): one row per (checkpoint x) item x option."""

UNSCORABLE_SCHEMA = pa.schema(
    [("step", pa.int64()), ("checkpoint", pa.string()), ("set", pa.string()), ("item_id", pa.string()),
     ("reason", pa.string())]
)
"""The unscorable stage: items the model could not score, and why."""

CHUNK_BATCHES = 4
"""A chunk (one scorer call, one committed shard) holds this many batches of items."""


@dataclass(frozen=True)
class ScoringTask:
    """One item to score, with the labels its rows carry."""

    item: MCItem
    set: str
    condition: str | None = None


@dataclass(frozen=True)
class ModelPoint:
    """Which model of a sweep the rows belong to; both None for a single model (evaluate)."""

    step: int | None = None
    checkpoint: str | None = None


def task_key(at: ModelPoint, task: ScoringTask) -> str:
    """The stage key of one item at one model."""
    return f"{'' if at.step is None else at.step}\t{task.set}\t{task.item.id}"


def length_key(item: MCItem) -> int:
    """A token-free length estimate: the prompt plus its longest option, in characters."""
    return len(item.prompt) + max(len(option) for option in item.options)


class ScoringStage:
    """The scored rows and unscorable items of one run directory."""

    def __init__(self, run: RunDir, rule: Rule, batch_size: int):
        self.scores = run.stage("scores")
        self.unscorable = run.stage("unscorable")
        self.rule = rule
        self.batch_size = max(batch_size, 1)

    def done_keys(self) -> set[str]:
        """Keys of every item already decided (scored or unscorable)."""
        return self.scores.done_keys() | self.unscorable.done_keys()

    def run(
        self, scorer: Scorer, tasks: Sequence[ScoringTask], at: ModelPoint = ModelPoint(),
        on_progress: Callable[[int], None] | None = None,
    ) -> None:
        """Score every task not yet decided at `at`, longest first; `on_progress(n)` after each commit of n items."""
        done = self.done_keys()
        todo = sorted((t for t in tasks if task_key(at, t) not in done), key=lambda t: -length_key(t.item))
        size = self.batch_size * CHUNK_BATCHES
        for start in range(0, len(todo), size):
            chunk = todo[start : start + size]
            scored, failed = _score_chunk(scorer, chunk, self.rule)
            if scored:
                rows = [row for task, results in scored for row in self._rows(at, task, results)]
                keys = [task_key(at, task) for task, _ in scored]
                self.scores.append(pa.Table.from_pylist(rows, schema=SCORES_SCHEMA), keys)
            if failed:
                rows = [{"step": at.step, "checkpoint": at.checkpoint, "set": task.set, "item_id": task.item.id,
                         "reason": why} for task, why in failed]
                keys = [task_key(at, task) for task, _ in failed]
                self.unscorable.append(pa.Table.from_pylist(rows, schema=UNSCORABLE_SCHEMA), keys)
            if on_progress:
                on_progress(len(chunk))

    def _rows(self, at: ModelPoint, task: ScoringTask, results: list[tuple[str, ScoreResult]]) -> list[dict]:
        item, primary = task.item, PRIMARY_NORMALISATION[self.rule]
        rows = []
        for index, (norm_text, result) in enumerate(results):
            n_chars, n_bytes = len(norm_text), len(norm_text.encode("utf-8"))
            rows.append({
                "step": at.step, "checkpoint": at.checkpoint, "set": task.set, "condition": task.condition,
                "item_id": item.id, "pair_id": item.pair_id, "lang": item.lang, "kind": item.kind,
                "option_index": index, "is_answer": index == item.answer, "logprob_sum": result.logprob_sum,
                "n_tokens": result.n_tokens, "n_chars": n_chars, "n_bytes": n_bytes, "greedy": result.greedy,
                "loss": option_loss(primary, result.logprob_sum, result.n_tokens, n_chars, n_bytes),
            })
        return rows

    def read(self) -> pa.Table:
        """Every committed row, in commit order."""
        return self.scores.read(SCORES_SCHEMA)

    def read_unscorable(self) -> list[dict]:
        """Every unscorable item with its reason, in commit order."""
        return self.unscorable.read(UNSCORABLE_SCHEMA).to_pylist()

    def unscorable_records(self, set_paths: Mapping[str, str]) -> list[InvalidRecord]:
        """The unscorable items as invalid.jsonl records (`set_paths`: set name -> its file)."""
        return [
            InvalidRecord(
                path=set_paths[row["set"]], line=None, field=None, item_id=row["item_id"],
                reason="unscorable" + ("" if row["step"] is None else f" at step {row['step']}") + f": {row['reason']}",
            )
            for row in self.read_unscorable()
        ]


def _score_chunk(
    scorer: Scorer, tasks: list[ScoringTask], rule: Rule
) -> tuple[list[tuple[ScoringTask, list[tuple[str, ScoreResult]]]], list[tuple[ScoringTask, str]]]:
    """Score `tasks` in one scorer call; an unscorable item is set aside with its reason and the rest
    scored again. Returns (scored tasks with (norm_text, result) per option, failed tasks with reasons)."""
    pending, failed = list(tasks), []
    while pending:
        per_item = [option_requests(task.item, rule) for task in pending]
        owner = [position for position, options in enumerate(per_item) for _ in options]
        try:
            results = scorer.score([option.request for options in per_item for option in options])
        except UnscorableRequest as error:
            if error.index is None and len(pending) > 1:  # the backend could not say which: one at a time
                scored = []
                for task in pending:
                    one_scored, one_failed = _score_chunk(scorer, [task], rule)
                    scored += one_scored
                    failed += one_failed
                return scored, failed
            position = owner[error.index] if error.index is not None else 0
            failed.append((pending.pop(position), str(error)))
            continue
        scored, offset = [], 0
        for task, options in zip(pending, per_item, strict=True):
            item_results = results[offset : offset + len(options)]
            offset += len(options)
            if not all(math.isfinite(r.logprob_sum) for r in item_results):
                sums = [r.logprob_sum for r in item_results]
                failed.append((task, f"a log-probability is not a finite number ({sums}); compute dtype overflow?"))
                continue
            scored.append((task, [(o.norm_text, r) for o, r in zip(options, item_results, strict=True)]))
        return scored, failed
    return [], failed
