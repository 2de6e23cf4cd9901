"""`crossknow evaluate`: score every option of every multiple-choice item, resumably.

The run directory holds config.yaml, inputs.json (the data file's SHA-256), model.json, the
scored shards under stages/scores/, and at the end scores.parquet, invalid.jsonl and
metrics.json. Run again on the same directory, it scores only the items no shard holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from importlib import resources
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from crossknow.data.formats import load_item_set
from crossknow.data.hub_data import data_file
from crossknow.data.jsonl import write_invalid
from crossknow.data.schemas import MCItem
from crossknow.errors import CrossknowError
from crossknow.evaluation.records import EvaluateConfig, EvaluateMetrics, ModelInfo
from crossknow.models.protocol import Scorer
from crossknow.models.registry import ModelOptions, load_scorer
from crossknow.models.specs import weights_hash
from crossknow.scoring.metrics import accuracy_table, item_predictions
from crossknow.scoring.refine import LOW_PRECISION
from crossknow.scoring.rules import Rule, check_boundary
from crossknow.scoring.stage import SCORES_SCHEMA, ModelPoint, ScoringStage, ScoringTask, task_key
from crossknow.store.atomic import atomic_write, atomic_write_json
from crossknow.store.config_keys import volatile_keys
from crossknow.store.hashing import file_sha256
from crossknow.store.run_dir import RunDir
from crossknow.version import VERSION

SAMPLE = "sample"
"""The --data value that names the small sample shipped with the package."""

MODEL = ModelPoint()
"""evaluate scores one model: its rows carry no step or checkpoint."""

RULE_FOR_FORMAT: dict[str, Rule] = {"adaxeval": "adaxeval", "jsonl": "adaxeval", "pitfalls": "lm-eval"}
"""The rule `--rule auto` picks for each input format."""


def resolve_data(data: str) -> Path:
    """The data file: the packaged sample for 'sample', else the path or Hub dataset as given
    (`crossknow.data.hub_data`)."""
    if data == SAMPLE:
        return Path(str(resources.files("crossknow") / "samples" / "sample.jsonl"))
    path = data_file(data)
    if not path.is_file():
        raise CrossknowError(f"data file not found: {data}")
    return path


def float32_scorer(
    config: EvaluateConfig, options: ModelOptions, scorer: Scorer,
    make_scorer: Callable[[str, ModelOptions], Scorer],
) -> Callable[[], Scorer] | None:
    """What builds the float32 scorer that decides the items `scorer`'s low precision leaves open (loaded on
    first use, once); None when `scorer` computes in float32 or `config.float32_decisions` is off."""
    if not config.float32_decisions or scorer.dtype not in LOW_PRECISION:
        return None
    return cache(lambda: make_scorer(config.model.spec, replace(options, dtype="float32")))


def run_evaluate(
    config: EvaluateConfig,
    out: Path,
    on_progress: Callable[[int, int], None] | None = None,
    make_scorer: Callable[[str, ModelOptions], Scorer] = load_scorer,
    weights_of: Callable[[str], str] = weights_hash,
) -> EvaluateMetrics:
    """Score `config.data` with `config.model` into the run directory `out`; return the metrics.

    `on_progress(done, total)` is called after each committed shard. `make_scorer` builds the
    backend only when some item is still unscored; `weights_of(spec)` identifies its weights in model.json.
    """
    started = time.monotonic()
    data_path = resolve_data(config.data)
    item_set = load_item_set(data_path, config.format, limit=config.limit)
    items = [item for item in item_set.items if isinstance(item, MCItem)]
    if len(items) != len(item_set.items):
        raise CrossknowError(f"{data_path} holds open questions, not multiple-choice items: evaluate scores options")
    if not items:
        reasons = "".join(f"\n  line {r.line}, field {r.field}: {r.reason}" for r in item_set.invalid[:5])
        raise CrossknowError(f"{data_path}: no usable items ({len(item_set.invalid)} invalid records){reasons}")
    rule: Rule = RULE_FOR_FORMAT.get(item_set.format, "adaxeval") if config.rule == "auto" else config.rule
    check_boundary(rule, config.boundary)
    resolved = config.model_dump() | {"format": item_set.format, "rule": rule, "data_path": str(data_path)}
    with RunDir(out) as run:
        run.open(resolved, {str(data_path): file_sha256(data_path)}, volatile=volatile_keys(EvaluateConfig),
                 paths=("data_path",), growable=("limit",), upgrade=EvaluateConfig.recorded)

        stage = ScoringStage(run, rule, config.batch_size, config.boundary)
        tasks = [ScoringTask(item, data_path.stem) for item in items]
        done = stage.done_keys()
        todo = [task for task in tasks if task_key(MODEL, task) not in done]
        model_path = out / "model.json"
        finished = len(items) - len(todo)
        if on_progress:
            on_progress(finished, len(items))
        if todo:
            options = config.model.options(batch_size=config.batch_size)
            scorer = make_scorer(config.model.spec, options)
            info = ModelInfo(spec=config.model.spec, backend=scorer.name, model_id=scorer.model_id, dtype=scorer.dtype,
                             weights=weights_of(config.model.spec))
            atomic_write_json(model_path, info.model_dump())

            def advance(n: int) -> None:
                nonlocal finished
                finished += n
                if on_progress:
                    on_progress(finished, len(items))

            stage.run(scorer, todo, MODEL, advance, float32_scorer(config, options, scorer, make_scorer))
        info = ModelInfo.model_validate_json(model_path.read_text(encoding="utf-8"))

        order = {item.id: position for position, item in enumerate(items)}
        frame = stage.read().to_pandas()
        frame = frame.assign(_order=frame["item_id"].map(order)).sort_values(["_order", "option_index"], kind="stable")
        frame = frame.drop(columns="_order").reset_index(drop=True)
        scores = pa.Table.from_pandas(frame, schema=SCORES_SCHEMA, preserve_index=False)
        atomic_write(out / "scores.parquet", lambda handle: pq.write_table(scores, handle), binary=True)
        unscorable = stage.unscorable_records({data_path.stem: str(data_path)})
        write_invalid(out / "invalid.jsonl", [*item_set.invalid, *unscorable])
        accuracy, n_items = accuracy_table(item_predictions(frame)) if len(frame) else ({}, {})
        metrics = EvaluateMetrics(
            accuracy=accuracy,
            n_items=n_items,
            n_invalid=len(item_set.invalid),
            n_unscorable=len(unscorable),
            rule=rule,
            boundary=config.boundary,
            format=item_set.format,
            model=info,
            crossknow_version=VERSION,
            items_scored_this_run=len(todo),
            items_rescored_float32=stage.rescored_count(),
            seconds=round(time.monotonic() - started, 3),
        )
        atomic_write_json(out / "metrics.json", metrics.model_dump())
        return metrics
