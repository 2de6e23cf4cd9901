"""The one scoring stage: every option of every item, scored, committed and resumable.

`crossknow evaluate` (one model) and `crossknow trace` (a sweep of checkpoints) both run it. A model's whole work list
is sorted by length, longest first, then cut into chunks; each chunk is one scorer call and one committed shard, so a
killed run loses at most one chunk. An item that cannot be scored (`UnscorableRequest`, or a loss that is not finite)
is committed to the `unscorable` stage with its reason: decided, so a resumed run does not try it again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from crossknow.data.schemas import InvalidRecord, MCItem
from crossknow.errors import UnscorableRequest
from crossknow.models.boundary import Boundary
from crossknow.models.protocol import Scorer, ScoreRequest, ScoreResult
from crossknow.scoring.normalise import OptionScore
from crossknow.scoring.refine import needs_float32
from crossknow.scoring.rules import PRIMARY_NORMALISATION, Rule, check_boundary, option_requests
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

RESCORED_SCHEMA = pa.schema([pa.field("key", pa.string(), metadata={"doc": "Stage key of an item scored again in "
                                                                          "float32 (scoring.refine)."})])
"""Rows of the float32_rescored stage."""

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

    def __init__(self, run: RunDir, rule: Rule, batch_size: int, boundary: Boundary = "moved"):
        """`boundary` must suit `rule` (`check_boundary`: `literal` goes with the adaxeval rule only)."""
        check_boundary(rule, boundary)
        self.scores = run.stage("scores")
        self.unscorable = run.stage("unscorable")
        self.rescored = run.stage("float32_rescored")
        self.rule = rule
        self.boundary = boundary
        self.batch_size = max(batch_size, 1)

    def done_keys(self) -> set[str]:
        """Keys of every item already decided (scored or unscorable)."""
        return self.scores.done_keys() | self.unscorable.done_keys()

    def run(
        self, scorer: Scorer, tasks: Sequence[ScoringTask], at: ModelPoint = ModelPoint(),
        on_progress: Callable[[int], None] | None = None, float32: Callable[[], Scorer] | None = None,
    ) -> None:
        """Score every task not yet decided at `at`, longest first; `on_progress(n)` after each commit of n items.

        With `float32` (which returns the same model's float32 scorer, built on first call), the items that
        `scorer`'s low precision leaves open (`crossknow.scoring.refine.needs_float32`) are scored again
        with it before the chunk is committed, and their keys recorded in the `float32_rescored` stage."""
        done = self.done_keys()
        todo = sorted((t for t in tasks if task_key(at, t) not in done), key=lambda t: -length_key(t.item))
        size = self.batch_size * CHUNK_BATCHES
        for start in range(0, len(todo), size):
            chunk = todo[start : start + size]
            scored, failed = _score_chunk(scorer, chunk, self.rule, self.boundary)
            if float32 is not None:
                scored, failed = self._rescore_open(float32, at, scored, failed)
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

    def _rescore_open(self, float32: Callable[[], Scorer], at: ModelPoint, scored: list, failed: list) -> tuple:
        """(scored, failed) with the open items of `scored` replaced by their float32 scores (or failures)."""
        open_tasks = [task for task, results in scored if needs_float32([option_score(*pair) for pair in results])]
        if not open_tasks:
            return scored, failed
        rescored, refailed = _score_chunk(float32(), open_tasks, self.rule, self.boundary)
        keys = [task_key(at, task) for task in open_tasks]
        self.rescored.append(pa.Table.from_pylist([{"key": key} for key in keys], schema=RESCORED_SCHEMA), keys)
        fresh = {id(task): results for task, results in rescored}  # tasks hold items, which do not hash
        lost = {id(task) for task, _ in refailed}
        kept = [(task, fresh.get(id(task), results)) for task, results in scored if id(task) not in lost]
        return kept, failed + refailed

    def rescored_count(self) -> int:
        """How many items were scored again in float32 (see `run`)."""
        return len(self.rescored.done_keys())

    def _rows(self, at: ModelPoint, task: ScoringTask, results: list[tuple[str, ScoreResult]]) -> list[dict]:
        item, primary = task.item, PRIMARY_NORMALISATION[self.rule]
        rows = []
        for index, (norm_text, result) in enumerate(results):
            score = option_score(norm_text, result)
            rows.append({
                "step": at.step, "checkpoint": at.checkpoint, "set": task.set, "condition": task.condition,
                "item_id": item.id, "pair_id": item.pair_id, "lang": item.lang, "kind": item.kind,
                "option_index": index, "is_answer": index == item.answer, "logprob_sum": result.logprob_sum,
                "n_tokens": result.n_tokens, "n_chars": score.n_chars, "n_bytes": score.n_bytes,
                "greedy": result.greedy, "loss": score.loss(primary),
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


def option_score(norm_text: str, result: ScoreResult) -> OptionScore:
    """The numbers every normalisation is computed from, for an option scored as `result` whose rule measures
    its length on `norm_text`."""
    return OptionScore(result.logprob_sum, result.n_tokens, len(norm_text), len(norm_text.encode("utf-8")))


def _score_chunk(
    scorer: Scorer, tasks: list[ScoringTask], rule: Rule, boundary: Boundary
) -> tuple[list[tuple[ScoringTask, list[tuple[str, ScoreResult]]]], list[tuple[ScoringTask, str]]]:
    """Score `tasks` in one scorer call (`score_isolating`). Returns (scored tasks with (norm_text, result)
    per option, failed tasks with reasons)."""
    per_item = [option_requests(task.item, rule, boundary) for task in tasks]
    results, failed = score_isolating(scorer, [[option.request for option in options] for options in per_item])
    scored = [(task, [(o.norm_text, r) for o, r in zip(options, results[position], strict=True)])
              for position, (task, options) in enumerate(zip(tasks, per_item, strict=True)) if position in results]
    return scored, [(tasks[position], why) for position, why in failed.items()]


def score_isolating(
    scorer: Scorer, groups: Sequence[Sequence[ScoreRequest]], keep_token_logprobs: bool = False
) -> tuple[dict[int, list[ScoreResult]], dict[int, str]]:
    """Score every group of requests (one task's: an item's options, a sequence) in one scorer call; a group
    that cannot be scored (the backend raises `UnscorableRequest`, or a log-probability is not a finite
    number) is set aside with its reason and the rest scored again. Returns (results by group position,
    reasons by group position)."""
    pending, failed = list(range(len(groups))), {}
    while pending:
        owner = [position for position in pending for _ in groups[position]]
        try:
            results = scorer.score([request for position in pending for request in groups[position]],
                                   keep_token_logprobs)
        except UnscorableRequest as error:
            if error.index is None and len(pending) > 1:  # the backend could not say which: one at a time
                scored = {}
                for position in pending:
                    one_scored, one_failed = score_isolating(scorer, [groups[position]], keep_token_logprobs)
                    if one_scored:
                        scored[position] = one_scored[0]
                    if one_failed:
                        failed[position] = one_failed[0]
                return scored, failed
            position = owner[error.index] if error.index is not None else pending[0]
            pending.remove(position)
            failed[position] = str(error)
            continue
        scored, offset = {}, 0
        for position in pending:
            group_results = results[offset : offset + len(groups[position])]
            offset += len(groups[position])
            if not all(math.isfinite(r.logprob_sum) for r in group_results):
                sums = [r.logprob_sum for r in group_results]
                failed[position] = f"a log-probability is not a finite number ({sums}); compute dtype overflow?"
                continue
            scored[position] = group_results
        return scored, failed
    return {}, failed
