"""`crossknow pitfalls finetune`: targeted fine-tuning on the pairs of one language, evaluated before and after
on every language (the paper's section 3.4, Table 2 and Appendix B).

Stages, each resumable: eval/base/ (which also gives DPO its rejected answers), train/, eval/tuned/ and
metrics.json (Orig., Enh. and Diff. per language). Orig. and Enh. compare the same pairs, those whose
target-language answer is valid in both (crossknow's choice); a `held-out` row covers the validation pairs.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pyarrow.parquet as pq

from crossknow.errors import CrossknowError
from crossknow.generation.cached_calls import CostMeter, sum_meters
from crossknow.pitfalls.eval_records import PairRow, PitfallsEvalConfig, PitfallsEvalMetrics
from crossknow.pitfalls.evaluation import Progress, SimulatorFactory, run_pitfalls_eval
from crossknow.pitfalls.finetune.examples import (
    ChatRender,
    PreferenceCounts,
    PreferenceExample,
    SFTExample,
    preference_examples,
    sft_examples,
)
from crossknow.pitfalls.finetune.records import (
    FinetuneSummary,
    LanguageRow,
    PitfallsFinetuneConfig,
    PitfallsFinetuneMetrics,
)
from crossknow.pitfalls.flaws import BilingualPair, PairFile, read_pair_file
from crossknow.store.atomic import atomic_write_json, atomic_write_text
from crossknow.store.config_keys import volatile_keys, with_defaults
from crossknow.store.hashing import file_sha256
from crossknow.store.run_dir import RunDir, absolute_path

__all__ = ["PitfallsFinetuneConfig", "evaluation_files", "language_row", "run_pitfalls_finetune"]

METRICS_FILE = "metrics.json"


def evaluation_files(config: PitfallsFinetuneConfig) -> list[tuple[str, Path]]:
    """(key, path) of every pair file to evaluate, the training file first; the key (the file's stem) names its
    evaluation directories. A file given twice is evaluated once; two files with one stem are an error."""
    files: dict[str, Path] = {}
    for name in [config.train_pairs, *config.eval_pairs]:
        path = Path(absolute_path(name))
        if not path.is_file():
            raise CrossknowError(f"pair file not found: {name}")
        if path.stem in files and files[path.stem] != path:
            raise CrossknowError(f"two pair files share the name {path.stem!r} ({files[path.stem]}, {path}); "
                                 "rename one")
        files[path.stem] = path
    return list(files.items())


class _Simulators(SimulatorFactory):
    """The evaluations' simulators, from one pool: a model is loaded once for all evaluations (each evaluation
    counts only what it sent, `run_pitfalls_eval`), and the fine-tuning run's models.json records each."""

    def release(self) -> None:
        """Free the loaded models' memory (before training)."""
        self.pool.release()
        gc.collect()


def _eval_config(config: PitfallsFinetuneConfig, path: Path, spec: str, limit: int | None) -> PitfallsEvalConfig:
    return PitfallsEvalConfig(
        pairs=str(path), models=[spec], answering=config.answering, limit=limit, rule=config.rule,
        max_tokens=config.max_tokens, temperature=config.temperature, max_attempts=config.max_attempts,
        seed=config.seed, device=config.device, dtype=config.dtype, batch_size=config.eval_batch_size,
        cache=config.cache)


def _meter(metrics: Sequence[PitfallsEvalMetrics]) -> CostMeter:
    return CostMeter(calls=sum(m.calls for m in metrics), cached_calls=sum(m.cached_calls for m in metrics),
                     prompt_tokens=sum(m.tokens for m in metrics), cost_usd=sum(m.cost_usd for m in metrics))


def _rows(directory: Path) -> list[PairRow]:
    return [PairRow.model_validate(row) for row in pq.read_table(directory / "pairs.parquet").to_pylist()]


def _accuracy(pairs: Sequence[tuple[bool | None, bool | None]]) -> tuple[float | None, float | None, int]:
    """(before, after, n) over the (before, after) correctness pairs where both are valid."""
    valid = [(b, a) for b, a in pairs if b is not None and a is not None]
    if not valid:
        return None, None, 0
    return sum(b for b, _ in valid) / len(valid), sum(a for _, a in valid) / len(valid), len(valid)


def language_row(pairs_file: str, role: str, before: Sequence[PairRow], after: Sequence[PairRow]) -> LanguageRow:
    """One row of Table 2 from the base model's and the fine-tuned model's rows of the same pairs."""
    after_by_id = {row.pair_id: row for row in after}
    matched = [(row, after_by_id[row.pair_id]) for row in before if row.pair_id in after_by_id]
    if len(matched) != len(before) or len(after) != len(before):
        raise CrossknowError(f"{pairs_file}: the evaluations before and after cover different pairs")
    original, enhanced, compared = _accuracy([(b.target_correct, a.target_correct) for b, a in matched])
    english_original, english_enhanced, _ = _accuracy([(b.en_correct, a.en_correct) for b, a in matched])
    return LanguageRow(
        lang=before[0].lang if before else "", pairs_file=pairs_file, role=role, n_pairs=len(before),
        n_compared=compared, n_invalid=len(before) - compared, original=original, enhanced=enhanced,
        diff=None if original is None or enhanced is None else enhanced - original,
        english_original=english_original, english_enhanced=english_enhanced)


def _chat_render(config: PitfallsFinetuneConfig) -> ChatRender:
    """The model's chat format for one user message, as the local generator renders it (no BOS)."""
    from crossknow.models.fast_tokenizer import load_tokenizer
    from crossknow.models.generator import ChatMessage
    from crossknow.models.hf_generator import chat_prompt_text
    from crossknow.training.trainer import model_source

    tokenizer = load_tokenizer(*model_source(config.model))
    return lambda message: chat_prompt_text(tokenizer, [ChatMessage("user", message)])


def _usable_pairs(path: Path, limit: int | None) -> PairFile:
    """The pairs of one file, as its evaluation will read them; CrossknowError when none is usable."""
    pair_file = read_pair_file(path, limit)
    if not pair_file.pairs:
        raise CrossknowError(f"{path}: no usable pair among the {pair_file.n_read} read")
    return pair_file


def run_pitfalls_finetune(config: PitfallsFinetuneConfig, out: Path,
                          on_progress: Progress | None = None) -> PitfallsFinetuneMetrics:
    """Run the stages of the module docstring into run directory `out`; return the metrics.
    `on_progress(stage, done, total, meter)`: the stages are 'base <file>', the method, 'tuned <file>'; the
    meter holds the evaluations' spend so far."""
    started = time.monotonic()
    out = Path(out)
    files = evaluation_files(config)
    train_key = files[0][0]
    # every file is read and checked before a model loads (the evaluations read them again, as they resume)
    pair_files = [_usable_pairs(path, config.limit if index == 0 else config.eval_limit)
                  for index, (_, path) in enumerate(files)]
    pair_file = pair_files[0]
    simulators = _Simulators(_eval_config(config, files[0][1], config.model, config.limit), run_dir=out)
    finished: list[PitfallsEvalMetrics] = []

    def evaluate(stage: str, spec: str, key: str, path: Path) -> PitfallsEvalMetrics:
        directory = out / "eval" / stage / key
        if (directory / METRICS_FILE).exists():
            metrics = PitfallsEvalMetrics.model_validate_json((directory / METRICS_FILE).read_text(encoding="utf-8"))
        else:
            before = _meter(finished)

            def progress(_model: str, done: int, total: int, meter: CostMeter) -> None:
                if on_progress:
                    on_progress(f"{stage} {key}", done, total, sum_meters([before, meter]))

            limit = config.limit if key == train_key else config.eval_limit
            metrics = run_pitfalls_eval(_eval_config(config, path, spec, limit), directory, progress, simulators)
        finished.append(metrics)
        return metrics

    try:
        with RunDir(out) as run:
            run.open(config.model_dump(), {str(path): file_sha256(path) for _, path in files},
                     volatile=volatile_keys(type(config)),
                     has_results=(out / "eval").is_dir() or (out / "train").is_dir(),
                     paths=("train_pairs", "eval_pairs", "cache"),
                     upgrade=lambda recorded: with_defaults(PitfallsFinetuneConfig, recorded))
            for key, path in files:
                evaluate("base", config.model, key, path)
            simulators.release()
            examples = _examples(config, pair_file.pairs, _rows(out / "eval" / "base" / train_key))

            def step_progress(step: int, total: int) -> None:
                if on_progress:
                    on_progress(config.method, step, total, _meter(finished))

            summary = _train(config, examples[0], out, step_progress)
            tuned = f"hf:{(out / summary.checkpoint).resolve()}"
            for key, path in files:
                evaluate("tuned", tuned, key, path)
            metrics = _metrics(config, files, examples, summary, out, _meter(finished), time.monotonic() - started)
            atomic_write_json(out / METRICS_FILE, metrics.model_dump())
            return metrics
    finally:
        simulators.close()


Examples = tuple[list[SFTExample] | list[PreferenceExample], PreferenceCounts | None]
"""The training examples and, for DPO, the counts of the pairs with and without a rejected answer."""


def _examples(config: PitfallsFinetuneConfig, pairs: Sequence[BilingualPair], base_rows: Sequence[PairRow]
              ) -> Examples:
    """(the training examples, the DPO counts or None); a DPO run without a wrong answer is an error."""
    render = _chat_render(config) if config.answering == "generative" else str
    if config.method == "sft":
        return sft_examples(pairs, config.answering, config.rule, render, config.validation_fraction,
                            config.seed), None
    examples, counts = preference_examples(pairs, {row.pair_id: row for row in base_rows}, config.answering,
                                           config.rule, render, config.validation_fraction, config.seed)
    if not examples:
        raise CrossknowError(f"DPO: the base model answered none of the {counts.pairs} training pairs wrong "
                             f"({counts.right} right, {counts.invalid} invalid): there is no rejected answer")
    return examples, counts


def _train(config: PitfallsFinetuneConfig, examples: Sequence[SFTExample | PreferenceExample], out: Path,
           on_step: Callable[[int, int], None]) -> FinetuneSummary:
    """Write train/examples.jsonl (once) and run the training stage (transformers is imported here, once every
    input is read)."""
    from crossknow.pitfalls.finetune.train import run_training

    path = out / "train" / "examples.jsonl"
    if not path.exists():
        atomic_write_text(path, "".join(example.model_dump_json() + "\n" for example in examples))
    return run_training(config, examples, out / "train", out, on_step)


def _metrics(config: PitfallsFinetuneConfig, files: list[tuple[str, Path]], examples: Examples,
             summary: FinetuneSummary, out: Path, meter: CostMeter, seconds: float) -> PitfallsFinetuneMetrics:
    rows = []
    for index, (key, path) in enumerate(files):
        before, after = _rows(out / "eval" / "base" / key), _rows(out / "eval" / "tuned" / key)
        rows.append(language_row(str(path), "training" if index == 0 else "evaluation", before, after))
        if index == 0:
            held_out = {e.pair_id for e in examples[0] if e.split == "validation"}
            rows.append(language_row(str(path), "held-out", [r for r in before if r.pair_id in held_out],
                                     [r for r in after if r.pair_id in held_out]))
    return PitfallsFinetuneMetrics(
        model=config.model, method=config.method, train_lang=rows[0].lang, rows=rows, preference=examples[1],
        training=summary, calls=meter.calls, cached_calls=meter.cached_calls, tokens=meter.prompt_tokens,
        cost_usd=round(meter.cost_usd, 6), seconds=round(seconds, 3))
