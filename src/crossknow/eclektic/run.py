"""An ECLEKTIC run, resumable: answers -> judgements -> correctness -> metrics, in one run directory.

Answers are committed per question and judgements per judge and question (`crossknow.store.run_dir`), and every call
goes through the request cache and the run's spend ledger: a run killed at any point resumes with the same command
and pays for nothing twice. A question whose request failed in transport is not committed: invalid in this
invocation's scores, asked again by the next. The run directory's files: docs/eclektic.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from crossknow.data.guarded import load_yaml
from crossknow.data.hub_data import data_file
from crossknow.data.jsonl import write_invalid
from crossknow.eclektic.answer import ANSWER_SCHEMA, answer_questions
from crossknow.eclektic.examples import EclekticSet, load_eclektic_set
from crossknow.eclektic.judge import JUDGEMENT_SCHEMA, judge_answers, majority_vote, unasked_judgement
from crossknow.eclektic.judge_free import GOLD_LOSS_JUDGE, RECALL_JUDGE, judge_by_gold_loss, judge_by_recall
from crossknow.eclektic.metrics import EclekticMetrics, eclektic_metrics, read_judgement_file
from crossknow.eclektic.run_config import EclekticConfig, ScoreConfig
from crossknow.eclektic.run_models import RunModels, check_specs
from crossknow.eclektic.run_outputs import (
    ANSWERS_FILE,
    JUDGEMENTS_FILE,
    examples_table,
    write_outputs,
    write_scores,
    write_table,
)
from crossknow.errors import CrossknowError
from crossknow.generation.cached_calls import CostMeter
from crossknow.generation.clients import MakeGenerator, MakeScorer
from crossknow.generation.structured import TRANSPORT_FAILURE
from crossknow.models.registry import load_generator, load_scorer
from crossknow.store.config_keys import volatile_keys
from crossknow.store.hashing import file_sha256
from crossknow.store.run_dir import CONFIG_FILE, RunDir
from crossknow.store.spend_ledger import SpendLedger, SpendTotal

INVALID_FILE = "invalid.jsonl"
Until = Literal["answers", "judgements", "scores"]
"""How far a run goes: `crossknow eclektic answer`, `judge`, or `run`."""
Progress = Callable[[str, int, int, CostMeter], None]
"""on_progress(stage, done, total, what this invocation has spent so far)."""


@dataclass(frozen=True)
class RunOutcome:
    """What one invocation did."""

    metrics: EclekticMetrics | None
    """The scores (None when the run stopped before scoring)."""
    examples: int
    """Examples of the set (question rows, source rows included), times samples."""
    pending: int
    """Questions left for a later run: a request failed in transport."""
    meter: CostMeter
    """What this invocation sent (calls, cache hits, tokens, cost)."""
    whole_run: SpendTotal
    """What the whole run sent over all its invocations, each call once (its spend ledger, spend/)."""
    seconds: float
    """Wall-clock time of the invocation."""


def subset(eclektic_set: EclekticSet, q_ids: Sequence[str]) -> EclekticSet:
    """The questions `q_ids` of `eclektic_set`, with their target languages."""
    keep = set(q_ids)
    return EclekticSet(eclektic_set.name, eclektic_set.variant, [q for q in eclektic_set.questions if q.q_id in keep],
                       {q_id: eclektic_set.targets[q_id] for q_id in q_ids}, [])


def _chunks(values: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(values), size):
        yield list(values[start : start + size])


def _split_failed(rows: pa.Table) -> tuple[pa.Table, pa.Table, set[str]]:
    """(rows of questions without a transport failure, rows of those with one, the latter's q_ids)."""
    errors = rows.column("error").to_pylist()
    failed = {q for q, error in zip(rows.column("q_id").to_pylist(), errors, strict=True)
              if error is not None and error.startswith(TRANSPORT_FAILURE)}
    mask = pc.is_in(rows.column("q_id"), pa.array(sorted(failed), pa.string()))
    return rows.filter(pc.invert(mask)), rows.filter(mask), failed


class EclekticRun:
    """One invocation on one run directory (see the module docstring)."""

    def __init__(self, config: EclekticConfig, run: RunDir, eclektic_set: EclekticSet, models: RunModels,
                 on_progress: Progress | None):
        self.config, self.run, self.set, self.models = config, run, eclektic_set, models
        self.on_progress = on_progress
        self.pending: set[str] = set()

    def progress(self, stage: str, done: int, total: int) -> None:
        """Report progress with the cost so far."""
        if self.on_progress:
            self.on_progress(stage, done, total, self.models.meter())

    def answers(self) -> pa.Table:
        """Answer every question no shard holds; every answer row (committed and pending), in set order."""
        stage = self.run.stage("answers")
        q_ids = list(self.set.targets)
        committed = stage.done_keys()
        todo = [q for q in q_ids if q not in committed]
        per_question = {q: len(langs) * self.config.samples for q, langs in self.set.targets.items()}
        total, done = sum(per_question.values()), sum(per_question[q] for q in q_ids if q not in todo)
        self.progress("answers", done, total)
        pending: list[pa.Table] = []
        for chunk in _chunks(todo, self.config.batch_size):
            base = done
            rows = answer_questions(
                subset(self.set, chunk), self.models.answerer(), model=self.config.model.spec,
                setting=self.config.setting, n_samples=self.config.samples, batch_size=self.config.batch_size,
                on_progress=lambda n, _total, _meter, base=base: self.progress("answers", base + n, total),
                shot_pool=self.set)
            kept, failed_rows, failed = _split_failed(rows)
            if kept.num_rows:
                stage.append(kept, [q for q in chunk if q not in failed])
            pending.append(failed_rows)
            self.pending |= failed
            done += sum(per_question[q] for q in chunk)
        return self._in_set_order(pa.concat_tables([stage.read(ANSWER_SCHEMA), *pending]))

    def judgements(self, answers: pa.Table) -> pa.Table:
        """Judge, with every judge of the config, each committed question it has not judged; every judgement
        row of those judges (invalid ones for the questions whose answers are pending)."""
        judges = self.config.all_judges()
        if not judges:
            raise CrossknowError("no judge: give --judge SPEC (an LLM judge) or --judge-free recall|gold-loss")
        stage = self.run.stage("judgements")
        committed = [q for q in self.set.targets if q not in self.pending]
        judged = stage.done_keys()
        todo = {judge: [q for q in committed if f"{judge}\t{q}" not in judged] for judge in judges}
        total = len(judges) * len(self.set.targets)
        done = total - sum(len(qs) for qs in todo.values())
        self.progress("judgements", done, total)
        pending: list[pa.Table] = []
        for judge, q_ids in todo.items():
            for chunk in _chunks(q_ids, self.config.batch_size):
                rows = self._judge(judge, chunk, answers)
                kept, failed_rows, failed = _split_failed(rows)
                if kept.num_rows:
                    stage.append(kept, [f"{judge}\t{q}" for q in chunk if q not in failed])
                pending.append(failed_rows)
                done += len(chunk)
                self.progress("judgements", done, total)
        invalid = [unasked_judgement(row, judge)
                   for row in answers.to_pylist() if row["q_id"] in self.pending for judge in judges]
        pending.append(pa.Table.from_pylist([row.model_dump() for row in invalid], schema=JUDGEMENT_SCHEMA))
        every = pa.concat_tables([stage.read(JUDGEMENT_SCHEMA), *pending])
        return every.filter(pc.is_in(every.column("judge"), pa.array(judges, pa.string())))

    def _judge(self, judge: str, q_ids: list[str], answers: pa.Table) -> pa.Table:
        if judge == GOLD_LOSS_JUDGE:
            return judge_by_gold_loss(subset(self.set, q_ids), self.models.scorer())
        chunk = answers.filter(pc.is_in(answers.column("q_id"), pa.array(q_ids, pa.string())))
        if judge == RECALL_JUDGE:
            return judge_by_recall(chunk, self.set, threshold=self.config.recall_threshold)
        return judge_answers(chunk, self.set, {judge: self.models.judge(judge)}, batch_size=self.config.batch_size)

    def _in_set_order(self, rows: pa.Table) -> pa.Table:
        order = {(q, lang): k for k, (q, _, lang) in enumerate(self.set.examples())}
        listed = rows.to_pylist()
        listed.sort(key=lambda row: (order[(row["q_id"], row["lang"])], row["sample"]))
        return pa.Table.from_pylist(listed, schema=rows.schema)


def open_run(config: EclekticConfig, out: Path) -> tuple[RunDir, EclekticSet]:
    """Read the set, lock the run directory and record (or check) its config and the set's hash."""
    data = data_file(config.data)
    if not data.is_file():
        raise CrossknowError(f"data file not found: {data}")
    check_specs(config)
    eclektic_set = load_eclektic_set(data, variant=config.variant, limit=config.limit)
    if not eclektic_set.targets:
        reasons = "".join(f"\n  line {r.line}, field {r.field}: {r.reason}" for r in eclektic_set.invalid[:5])
        raise CrossknowError(f"{data}: no usable question ({len(eclektic_set.invalid)} invalid records){reasons}")
    run = RunDir(out)
    run.open(config.model_dump(), {str(data): file_sha256(data)},
             volatile=volatile_keys(type(config)), paths=("data", "cache", "prices"), upgrade=type(config).recorded)
    write_invalid(Path(out) / INVALID_FILE, eclektic_set.invalid)
    return run, eclektic_set


def score_correctness(config: ScoreConfig, correctness: pa.Table) -> EclekticMetrics:
    """The metrics of a correctness table, as the config's scoring fields say."""
    return eclektic_metrics(correctness, source_rows=config.source_rows, ci=config.ci,
                            confidence=config.confidence, n_boot=config.n_boot, seed=config.boot_seed)


def score(config: ScoreConfig, judgements: pa.Table) -> EclekticMetrics:
    """The metrics of the majority verdicts of `judgements`."""
    return score_correctness(config, majority_vote(judgements))


def run_eclektic(
    config: EclekticConfig,
    out: Path,
    *,
    until: Until = "scores",
    on_progress: Progress | None = None,
    make_generator: MakeGenerator = load_generator,
    make_scorer: MakeScorer = load_scorer,
) -> RunOutcome:
    """Run (or resume) `config` into run directory `out` as far as `until`; see the module docstring."""
    started = time.monotonic()
    run, eclektic_set = open_run(config, Path(out))
    models = RunModels(config, Path(out), make_generator, make_scorer)
    ledger = SpendLedger(out)
    models.pool.record_spend(ledger)
    metrics = None
    try:
        with run:
            state = EclekticRun(config, run, eclektic_set, models, on_progress)
            answers = state.answers()
            write_table(Path(out) / ANSWERS_FILE, answers)
            if until != "answers":
                judgements = state.judgements(answers)
                write_table(Path(out) / JUDGEMENTS_FILE, judgements)
                if until == "scores":
                    metrics = score(config, judgements)
                    write_outputs(Path(out), eclektic_set, answers, judgements, metrics,
                                  lambda table: score(config, table))
    finally:
        models.close()
    examples = sum(len(langs) for langs in eclektic_set.targets.values()) * config.samples
    return RunOutcome(metrics, examples, len(state.pending), models.meter(), ledger.total(),
                      time.monotonic() - started)


def rescore_run(run_dir: Path, config: ScoreConfig) -> EclekticMetrics:
    """Score the answers and judgements a run directory holds again, as `config` says (another reading of the
    source rows, another interval); rewrites metrics.json, examples.parquet and judges.json."""
    run_dir = Path(run_dir)
    paths = [run_dir / name for name in (CONFIG_FILE, ANSWERS_FILE, JUDGEMENTS_FILE)]
    missing = [path.name for path in paths if not path.is_file()]
    if missing:
        raise CrossknowError(f"{run_dir} has no {', '.join(missing)}: is it an ECLEKTIC run that got to its "
                             "judgements (`crossknow eclektic judge` or `run`)?")
    recorded = load_yaml(paths[0]) or {}
    run_config = EclekticConfig.model_validate(recorded | config.model_dump())
    run, eclektic_set = open_run(run_config, run_dir)
    with run:
        answers, judgements = pq.read_table(paths[1]), pq.read_table(paths[2])
        metrics = score(config, judgements)
        write_outputs(run_dir, eclektic_set, answers, judgements, metrics, lambda table: score(config, table))
    return metrics


def score_judgement_file(path: Path, out: Path, config: ScoreConfig) -> EclekticMetrics:
    """Score a JSONL of judgements made elsewhere (`crossknow.eclektic.metrics.read_judgement_file`) into run
    directory `out`: config.yaml, inputs.json, metrics.json and examples.parquet."""
    path = Path(path)
    if not path.is_file():
        raise CrossknowError(f"judgements file not found: {path}")
    correctness = read_judgement_file(path)
    metrics = score_correctness(config, correctness)
    with RunDir(out) as run:
        run.open(config.model_dump() | {"judgements": str(path)}, {str(path): file_sha256(path)},
                 paths=("judgements",))
        write_scores(Path(out), metrics, examples_table(correctness), None)
    return metrics
