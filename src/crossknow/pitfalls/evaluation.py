"""`crossknow pitfalls eval`: models answer both sides of bilingual pairs (the paper's Fig. 3 and 5), resumably.

Flawed pairs (`crossknow.pitfalls.flaws`) are reported, never answered. Answers are committed per chunk to the
`answers` stage; a pair with an invalid answer is reported, not scored, so that both accuracies of a model are
over the same pairs (crossknow's choice). The run directory's files: docs/pitfalls.md.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from crossknow.data.hub_data import data_file
from crossknow.data.jsonl import write_invalid
from crossknow.errors import CrossknowError
from crossknow.generation.cached_calls import CostMeter, sum_meters
from crossknow.generation.clients import ClientPool, Role
from crossknow.generation.pricing import PriceTable
from crossknow.generation.structured import TRANSPORT_FAILURE, StructuredClient
from crossknow.pitfalls.eval_records import (
    CELLS,
    PAIRS_SCHEMA,
    CapViolations,
    ModelLanguageScores,
    PairRow,
    PitfallsEvalConfig,
    PitfallsEvalMetrics,
)
from crossknow.pitfalls.flaws import BilingualPair, PairFile, read_pair_file
from crossknow.pitfalls.simulate import GenerativeSimulator, LossSimulator, SimAnswer, Simulator, template_language
from crossknow.store.atomic import atomic_write, atomic_write_json
from crossknow.store.config_keys import volatile_keys
from crossknow.store.hashing import file_sha256
from crossknow.store.run_dir import RunDir
from crossknow.store.spend_ledger import SpendLedger, SpendTotal

Progress = Callable[[str, int, int, CostMeter], None]
"""on_progress(model, pairs done, pairs in all, what this invocation has spent so far)."""
MakeSimulator = Callable[[str, PitfallsEvalConfig], Simulator]


def simulator_role(config: PitfallsEvalConfig) -> Role:
    """The simulators' role: how the models are reached (`config.models`) and the answering settings."""
    return Role(access=config.models, temperature=config.temperature, seed=config.seed,
                max_tokens=config.max_tokens, max_attempts=config.max_attempts)


def simulator_pool(config: PitfallsEvalConfig, run_dir: Path | None = None) -> ClientPool:
    """A pool of the models of `config`: its batch size, cache and prices; it records them in `run_dir`."""
    return ClientPool(Path(config.cache) if config.cache else None,
                      PriceTable.load(config.prices) if config.prices else None, run_dir=run_dir,
                      batch_size=config.batch_size)


class SimulatorFactory:
    """Builds each model's simulator on first use, from `pool` (a pool of its own, closed with the factory, when
    none is given, recording the models in `run_dir`)."""

    def __init__(self, config: PitfallsEvalConfig, pool: ClientPool | None = None, run_dir: Path | None = None):
        self.config = config
        self.pool = pool or simulator_pool(config, run_dir)
        self._own_pool = pool is None

    def __call__(self, spec: str, config: PitfallsEvalConfig) -> Simulator:
        """The simulator of `spec` under `config` (loss-based or generative)."""
        role = simulator_role(config)
        if config.answering == "loss":
            return LossSimulator(spec, self.pool.scorer(spec, role), config.rule)
        return GenerativeSimulator.from_pool(spec, self.pool, spec, role)

    def close(self) -> None:
        """Close the pool's request cache, if the pool is the factory's own."""
        if self._own_pool:
            self.pool.close()


def pair_row(pair: BilingualPair, model: str, english: SimAnswer, target: SimAnswer) -> PairRow:
    """The row of one pair answered by `model`."""
    en_correct = None if english.choice is None else english.choice == pair.english.answer
    target_correct = None if target.choice is None else target.choice == pair.target.answer
    cell = None
    if en_correct is not None and target_correct is not None:
        cell = f"{'right' if en_correct else 'wrong'}_{'right' if target_correct else 'wrong'}"
    return PairRow(
        pair_id=pair.pair_id, model=model, lang=pair.target.lang, source=pair.source, category=pair.category,
        answer=pair.english.answer, en_choice=english.choice, target_choice=target.choice, en_correct=en_correct,
        target_correct=target_correct, cell=cell, en_error=english.error, target_error=target.error,
        en_raw=english.raw, target_raw=target.raw,
    )


def model_language_scores(rows: Sequence[PairRow]) -> list[ModelLanguageScores]:
    """Accuracies, drop and 2x2 counts per (model, language), in order of first appearance."""
    groups: dict[tuple[str, str], list[PairRow]] = {}
    for row in rows:
        groups.setdefault((row.model, row.lang), []).append(row)
    scores = []
    for (model, lang), group in groups.items():
        scored = [row for row in group if row.cell is not None]
        cells = {cell: sum(row.cell == cell for row in scored) for cell in CELLS}
        english = sum(bool(row.en_correct) for row in scored) / len(scored) if scored else None
        target = sum(bool(row.target_correct) for row in scored) / len(scored) if scored else None
        scores.append(ModelLanguageScores(
            model=model, lang=lang, n_pairs=len(group), n_scored=len(scored), n_invalid=len(group) - len(scored),
            english_accuracy=english, target_accuracy=target,
            drop=None if english is None or target is None else english - target, cells=cells))
    return scores


def _answer_chunk(simulator: Simulator, pairs: Sequence[BilingualPair]) -> list[PairRow]:
    answers = simulator.answer([question for pair in pairs for question in (pair.english, pair.target)])
    if len(answers) != 2 * len(pairs):
        raise CrossknowError(f"simulator {simulator.name!r} gave {len(answers)} answers to {2 * len(pairs)} questions")
    return [pair_row(pair, simulator.name, answers[2 * i], answers[2 * i + 1]) for i, pair in enumerate(pairs)]


def _failed_in_transport(row: PairRow) -> bool:
    return any(error is not None and error.startswith(TRANSPORT_FAILURE) for error in (row.en_error, row.target_error))


def run_pitfalls_eval(
    config: PitfallsEvalConfig, out: Path, on_progress: Progress | None = None,
    make_simulator: MakeSimulator | None = None,
) -> PitfallsEvalMetrics:
    """Evaluate `config.models` on `config.pairs` into the run directory `out`; return the metrics (see the
    module docstring). `make_simulator(spec, config)` builds a model's simulator only when it has work left."""
    started = time.monotonic()
    path = data_file(config.pairs)
    if not path.is_file():
        raise CrossknowError(f"pair file not found: {path}")
    for spec in config.models.specs:
        simulator_role(config).parse(spec, "generator" if config.answering == "generative" else "model")
    pair_file = read_pair_file(path, config.limit, config.k)
    if not pair_file.pairs:
        reasons = "".join(f"\n  line {r.line}, pair {r.item_id}: {r.reason}" for r in pair_file.invalid[:5])
        raise CrossknowError(f"{path}: no usable pair among {pair_file.n_read} ({len(pair_file.invalid)} "
                             f"invalid){reasons}")
    factory = SimulatorFactory(config, run_dir=Path(out))
    build = make_simulator or factory
    simulators: list[Simulator] = []
    pending: list[PairRow] = []

    before: list[CostMeter] = []
    """What each simulator's client had spent when this evaluation took it (a pool may share a client between
    evaluations of one process, as `crossknow pitfalls finetune` runs them)."""

    def meter() -> CostMeter:
        return _spent_since(sum_meters(_meters(simulators)), sum_meters(before))

    try:
        with RunDir(out) as run:
            run.open(config.model_dump(), {str(path): file_sha256(path)}, volatile=volatile_keys(type(config)),
                     paths=("pairs", "cache", "prices"), growable=("limit",), upgrade=type(config).recorded)
            write_invalid(out / "invalid.jsonl", pair_file.invalid)
            ledger = SpendLedger(out)
            stage = run.stage("answers")
            total = len(pair_file.pairs)
            for spec in config.models.specs:
                done = stage.done_keys()
                todo = [pair for pair in pair_file.pairs if f"{spec}\t{pair.pair_id}" not in done]
                finished = total - len(todo)
                if on_progress:
                    on_progress(spec, finished, total, meter())
                if not todo:
                    continue
                simulator = build(spec, config)
                if isinstance(getattr(simulator, "client", None), StructuredClient):  # generative answering
                    simulator.client.record_spend(ledger, spec)
                simulators.append(simulator)
                before.append(sum_meters(_meters([simulator])))
                for start in range(0, len(todo), config.batch_size):
                    rows = _answer_chunk(simulator, todo[start : start + config.batch_size])
                    kept = [row for row in rows if not _failed_in_transport(row)]
                    pending += [row for row in rows if _failed_in_transport(row)]
                    if kept:
                        table = pa.Table.from_pylist([row.model_dump() for row in kept], schema=PAIRS_SCHEMA)
                        stage.append(table, [f"{spec}\t{row.pair_id}" for row in kept])
                    finished += len(rows)
                    if on_progress:
                        on_progress(spec, finished, total, meter())
            rows = [PairRow.model_validate(row) for row in stage.read(PAIRS_SCHEMA).to_pylist()] + pending
            ordered = _in_file_order(rows, pair_file, config.models.specs)
            metrics = _metrics(config, pair_file, ordered, simulators, meter(), len(pending),
                               time.monotonic() - started, ledger.total())
            table = pa.Table.from_pylist([row.model_dump() for row in ordered], schema=PAIRS_SCHEMA)
            atomic_write(out / "pairs.parquet", lambda handle: pq.write_table(table, handle), binary=True)
            atomic_write_json(out / "metrics.json", metrics.model_dump())
            return metrics
    finally:
        factory.close()


def _meters(simulators: Sequence[Simulator]) -> list[CostMeter]:
    return [simulator.client.meter for simulator in simulators if isinstance(simulator, GenerativeSimulator)]


def _in_file_order(rows: Sequence[PairRow], pair_file: PairFile, models: Sequence[str]) -> list[PairRow]:
    """The rows of the current pairs and models (a resumed run with a lower scope keeps its extra rows in the
    stage only), model by model, pairs in file order."""
    position = {pair.pair_id: k for k, pair in enumerate(pair_file.pairs)}
    rank = {model: k for k, model in enumerate(models)}
    kept = [row for row in rows if row.pair_id in position and row.model in rank]
    return sorted(kept, key=lambda row: (rank[row.model], position[row.pair_id]))


def _spent_since(now: CostMeter, before: CostMeter) -> CostMeter:
    """What was spent between the meter readings `before` and `now`."""
    return CostMeter(**{name: value - getattr(before, name) for name, value in dataclasses.asdict(now).items()})


def _metrics(config: PitfallsEvalConfig, pair_file: PairFile, rows: Sequence[PairRow], simulators: Sequence[Simulator],
             meter: CostMeter, pending: int, seconds: float, whole_run: SpendTotal) -> PitfallsEvalMetrics:
    languages = sorted({pair.target.lang for pair in pair_file.pairs})
    caps = {lang: CapViolations(origins=len(over), pairs=sum(over.values()), max_pairs=max(over.values()))
            for lang, over in pair_file.cap_violations.items()}
    return PitfallsEvalMetrics(
        scores=model_language_scores(rows), answering=config.answering, n_read=pair_file.n_read,
        n_usable=len(pair_file.pairs), n_flawed=len(pair_file.invalid) - _unreadable(pair_file),
        flaw_counts=pair_file.flaw_counts, k=config.k, cap_violations=caps,
        templates={lang: template_language(lang) for lang in ["en", *languages]} if config.answering == "generative"
        else {},
        prompt_formats={s.name: str(getattr(s, "prompt_format", "loss")) for s in simulators},
        pending=pending, calls=meter.calls, cached_calls=meter.cached_calls,
        tokens=meter.prompt_tokens + meter.completion_tokens, cost_usd=round(meter.cost_usd, 6),
        seconds=round(seconds, 3), run_calls=whole_run.calls, run_tokens=whole_run.tokens,
        run_cost_usd=round(whole_run.cost_usd, 6),
    )


def _unreadable(pair_file: PairFile) -> int:
    """Invalid records of the item reader (unreadable items), which are not flawed pairs."""
    return sum(record.item_id is None for record in pair_file.invalid)
