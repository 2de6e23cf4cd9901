"""`crossknow evaluate`: score every option of every multiple-choice item, resumably.

The run directory holds config.yaml, inputs.json (the data file's SHA-256), model.json, the
scored shards under stages/scores/, and at the end scores.parquet, invalid.jsonl and
metrics.json. Run again on the same directory, it scores only the items no shard holds.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import crossknow
from crossknow.data.formats import load_item_set
from crossknow.data.schemas import MCItem
from crossknow.errors import CrossknowError
from crossknow.evaluate.records import EvaluateConfig, EvaluateMetrics, ModelInfo
from crossknow.store.hashing import file_sha256
from crossknow.models.protocol import Scorer
from crossknow.models.registry import ScorerOptions, load_scorer
from crossknow.scoring.metrics import accuracy_table, item_predictions
from crossknow.scoring.batches import ScoredOption, score_in_batches
from crossknow.scoring.rules import Rule
from crossknow.store.atomic import atomic_write, atomic_write_json, atomic_write_text
from crossknow.store.run_dir import RunDir

SCORES_SCHEMA = pa.schema(
    [
        ("item_id", pa.string()),
        ("lang", pa.string()),
        ("kind", pa.string()),
        ("pair_id", pa.string()),
        ("option_idx", pa.int32()),
        ("is_answer", pa.bool_()),
        ("logprob_sum", pa.float64()),
        ("n_tokens", pa.int32()),
        ("n_chars", pa.int32()),
        ("n_bytes", pa.int32()),
        ("mean_loss", pa.float64()),
        ("greedy", pa.bool_()),
    ]
)
"""scores.parquet: one row per item and option (n_chars/n_bytes count the rule's norm_text)."""

SAMPLE = "sample"
"""The --data value that names the small sample shipped with the package."""

RULE_FOR_FORMAT: dict[str, Rule] = {"adaxeval": "adaxeval", "jsonl": "adaxeval", "pitfalls": "lm-eval"}
"""The rule `--rule auto` picks for each input format."""


def resolve_data(data: str) -> Path:
    """The data file: the packaged sample for 'sample', else the path as given."""
    if data == SAMPLE:
        return Path(str(resources.files("crossknow") / "samples" / "sample.jsonl"))
    path = Path(data)
    if not path.is_file():
        raise CrossknowError(f"data file not found: {data}")
    return path


def _rows(item: MCItem, options: list[ScoredOption]) -> list[dict[str, Any]]:
    return [
        {
            "item_id": item.id,
            "lang": item.lang,
            "kind": item.kind,
            "pair_id": item.pair_id,
            "option_idx": option.index,
            "is_answer": option.index == item.answer,
            "logprob_sum": option.result.logprob_sum,
            "n_tokens": option.result.n_tokens,
            "n_chars": len(option.norm_text),
            "n_bytes": len(option.norm_text.encode("utf-8")),
            "mean_loss": option.mean_loss,
            "greedy": option.result.greedy,
        }
        for option in options
    ]


def run_evaluate(
    config: EvaluateConfig,
    out: Path,
    on_progress: Callable[[int, int], None] | None = None,
    make_scorer: Callable[[str, ScorerOptions], Scorer] = load_scorer,
) -> EvaluateMetrics:
    """Score `config.data` with `config.model` into the run directory `out`; return the metrics.

    `on_progress(done, total)` is called after each committed shard. `make_scorer` builds the
    backend only when some item is still unscored.
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
    resolved = config.model_dump() | {"format": item_set.format, "rule": rule, "data_path": str(data_path)}
    run = RunDir(out)
    run.open(resolved, {str(data_path): file_sha256(data_path)}, volatile=("batch_size",))

    stage = run.stage("scores")
    done = stage.done_keys()
    todo = [item for item in items if item.id not in done]
    model_path = out / "model.json"
    if on_progress:
        on_progress(len(items) - len(todo), len(items))
    if todo:
        options = ScorerOptions(
            device=config.device, dtype=config.dtype, batch_size=config.batch_size,
            base_url=config.base_url, api_key_env=config.api_key_env,
        )
        scorer = make_scorer(config.model, options)
        info = ModelInfo(spec=config.model, backend=scorer.name, model_id=scorer.model_id, dtype=scorer.dtype)
        atomic_write_json(model_path, info.model_dump())
        finished = len(items) - len(todo)
        for scored in score_in_batches(scorer, todo, rule, config.batch_size):
            rows = [row for item, options in scored for row in _rows(item, options)]
            stage.append(pa.Table.from_pylist(rows, schema=SCORES_SCHEMA), [item.id for item, _ in scored])
            finished += len(scored)
            if on_progress:
                on_progress(finished, len(items))
    info = ModelInfo.model_validate_json(model_path.read_text(encoding="utf-8"))

    order = {item.id: position for position, item in enumerate(items)}
    table = stage.read(SCORES_SCHEMA)
    rows = sorted(table.to_pylist(), key=lambda row: (order[row["item_id"]], row["option_idx"]))
    scores = pa.Table.from_pylist(rows, SCORES_SCHEMA)
    atomic_write(out / "scores.parquet", lambda handle: pq.write_table(scores, handle), binary=True)
    atomic_write_text(
        out / "invalid.jsonl",
        "".join(json.dumps(record.model_dump(), ensure_ascii=False) + "\n" for record in item_set.invalid),
    )
    accuracy, n_items = accuracy_table(item_predictions(rows))
    metrics = EvaluateMetrics(
        accuracy=accuracy,
        n_items=n_items,
        n_invalid=len(item_set.invalid),
        rule=rule,
        format=item_set.format,
        model=info,
        crossknow_version=crossknow.__version__,
        items_scored_this_run=len(todo),
        seconds=round(time.monotonic() - started, 3),
    )
    atomic_write_json(out / "metrics.json", metrics.model_dump())
    return metrics
