"""`crossknow trace`: score every checkpoint of a sweep on evaluation sets labelled by condition.

The run directory holds config.yaml, inputs.json (the sets' SHA-256), checkpoints.json (each
checkpoint's step, spec and weights hash, recorded when it is first scored), the shards under
stages/trace/ (one key per checkpoint x set x item: resumable checkpoint by checkpoint and inside
one), and at the end trace.parquet, one row per checkpoint x item x option. New checkpoints that
appear in a sweep directory (training still running) are scored when the command runs again.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from crossknow.data.formats import load_item_set
from crossknow.data.schemas import MCItem
from crossknow.dynamics.trace_config import TraceConfig
from crossknow.dynamics.checkpoints import Checkpoint, checkpoint_hash, discover_checkpoints
from crossknow.errors import CrossknowError
from crossknow.store.hashing import file_sha256
from crossknow.models.registry import ScorerOptions, load_scorer
from crossknow.scoring.batches import score_in_batches
from crossknow.store.atomic import atomic_write, atomic_write_json
from crossknow.store.run_dir import RunDir

TRACE_SCHEMA = pa.schema(
    [
        ("step", pa.int64()),
        ("checkpoint", pa.string()),
        ("condition", pa.string()),
        ("set", pa.string()),
        ("item_id", pa.string()),
        ("pair_id", pa.string()),
        ("lang", pa.string()),
        ("kind", pa.string()),
        ("option_index", pa.int32()),
        ("is_answer", pa.bool_()),
        ("logprob_sum", pa.float64()),
        ("n_tokens", pa.int32()),
        ("loss", pa.float64()),
    ]
)
"""trace.parquet: one row per checkpoint x item x option; `loss` is the mean token cross-entropy of the
option's continuation (the AdaXEval loss), `logprob_sum` its summed log-probability."""

CONDITIONS = ("memorisation", "intralingual", "interlingual", "interlingual-cloze")
"""Condition labels: cloze and question items in the training language, question and cloze items in another."""


@dataclass(frozen=True)
class EvalSet:
    """One evaluation set with its items' conditions."""

    name: str
    path: Path
    items: list[MCItem]
    conditions: list[str]


def condition_of(item: MCItem, train_lang: str) -> str:
    """memorisation (cloze, training language), intralingual (question, training language),
    interlingual (question, another language) or interlingual-cloze (cloze, another language)."""
    if item.lang == train_lang:
        return "memorisation" if item.kind == "cloze" else "intralingual"
    return "interlingual" if item.kind == "question" else "interlingual-cloze"


def load_sets(data: list[str], train_lang: str) -> list[EvalSet]:
    """Read every `[CONDITION=]FILE`; set names are the files' stems and must differ."""
    sets = []
    for entry in data:
        label, sep, file = entry.partition("=")
        if not sep or Path(entry).exists():
            label, file = "", entry
        path = Path(file)
        if not path.is_file():
            raise CrossknowError(f"--data {entry}: file not found: {file}")
        items = [item for item in load_item_set(path).items if isinstance(item, MCItem)]
        if not items:
            raise CrossknowError(f"--data {entry}: no multiple-choice items in {file}")
        conditions = [label or condition_of(item, train_lang) for item in items]
        sets.append(EvalSet(path.stem, path, items, conditions))
    names = [s.name for s in sets]
    if len(set(names)) != len(names):
        raise CrossknowError(f"--data: two sets share a file name ({names}); set names are the files' stems")
    return sets


def _key(step: int, set_name: str, item_id: str) -> str:
    return f"{step}\t{set_name}\t{item_id}"


def _record_checkpoint(path: Path, checkpoint: Checkpoint) -> None:
    recorded = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    entry = {"spec": checkpoint.spec, "label": checkpoint.label, "weights": checkpoint_hash(checkpoint)}
    previous = recorded.get(str(checkpoint.step))
    if previous and previous != entry:
        raise CrossknowError(f"checkpoint at step {checkpoint.step} changed since this trace began ({checkpoint.spec})")
    recorded[str(checkpoint.step)] = entry
    atomic_write_json(path, recorded)


def run_trace(
    config: TraceConfig, out: Path, on_progress: Callable[[int, int, str], None] | None = None
) -> pa.Table:
    """Score every checkpoint on every set into run directory `out`; return the trace table.

    `on_progress(items done, items total, checkpoint label)` is called after each committed shard.
    """
    out = Path(out)
    checkpoints = discover_checkpoints(config.checkpoints)
    sets = load_sets(config.data, config.train_lang)
    run = RunDir(out)
    run.open(config.model_dump(), {str(s.path): file_sha256(s.path) for s in sets}, volatile=("batch_size", "device"))
    stage = run.stage("trace")
    done = stage.done_keys()
    total = len(checkpoints) * sum(len(s.items) for s in sets)
    finished = len(done)
    options = ScorerOptions(device=config.device, dtype=config.dtype, batch_size=config.batch_size)
    for checkpoint in checkpoints:
        todo = [(s, [i for i in range(len(s.items)) if _key(checkpoint.step, s.name, s.items[i].id) not in done])
                for s in sets]
        if not any(indices for _, indices in todo):
            continue
        _record_checkpoint(out / "checkpoints.json", checkpoint)
        scorer = load_scorer(checkpoint.spec, options)
        for eval_set, indices in todo:
            condition = dict(zip((it.id for it in eval_set.items), eval_set.conditions))
            for scored in score_in_batches(scorer, [eval_set.items[i] for i in indices], config.rule, config.batch_size):
                rows = [
                    {"step": checkpoint.step, "checkpoint": checkpoint.label, "condition": condition[item.id],
                     "set": eval_set.name, "item_id": item.id, "pair_id": item.pair_id, "lang": item.lang,
                     "kind": item.kind, "option_index": option.index, "is_answer": option.index == item.answer,
                     "logprob_sum": option.result.logprob_sum, "n_tokens": option.result.n_tokens,
                     "loss": option.mean_loss}
                    for item, scored_options in scored for option in scored_options
                ]
                keys = [_key(checkpoint.step, eval_set.name, item.id) for item, _ in scored]
                stage.append(pa.Table.from_pylist(rows, schema=TRACE_SCHEMA), keys)
                finished += len(keys)
                if on_progress:
                    on_progress(finished, total, checkpoint.label)
        del scorer
        gc.collect()
    table = stage.read(TRACE_SCHEMA).sort_by([("step", "ascending"), ("set", "ascending"),
                                              ("item_id", "ascending"), ("option_index", "ascending")])
    atomic_write(out / "trace.parquet", lambda handle: pq.write_table(table, handle), binary=True)
    return table


def copy_training_record(sources: list[str], out: Path) -> None:
    """Copy the training loss log and config of the one `crossknow train` run among `sources` into `out`
    (train_log.parquet, train_config.yaml), so that the report shows both."""
    runs = [Path(s) for s in sources if (Path(s) / "train_log.parquet").is_file()]
    if len(runs) != 1:
        return
    for name, target in (("train_log.parquet", "train_log.parquet"), ("config.yaml", "train_config.yaml")):
        if (runs[0] / name).is_file():
            data = (runs[0] / name).read_bytes()
            atomic_write(Path(out) / target, lambda handle, data=data: handle.write(data), binary=True)
