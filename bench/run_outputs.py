"""Read what the benchmarked commands wrote: crossknow's scores.parquet and lm-eval's logged samples.

Both are turned into {(item id, option index): (summed log-probability, greedy flag)}.
"""

from __future__ import annotations

import json
from pathlib import Path

Scores = dict[tuple[str, int], tuple[float, bool]]
"""(item id, option index) -> (summed log-probability of the continuation, greedy flag)."""


def _column(names: list[str], *candidates: str) -> str:
    for name in candidates:
        if name in names:
            return name
    raise SystemExit(f"scores.parquet has none of the columns {candidates}; it has {names}")


def crossknow_scores(run_dir: Path) -> Scores:
    """The per-option scores of a `crossknow evaluate` run directory."""
    import pyarrow.parquet as pq

    table = pq.read_table(run_dir / "scores.parquet")
    option = _column(table.column_names, "option_idx", "option_index")
    greedy = _column(table.column_names, "greedy")
    rows = table.select(["item_id", option, "logprob_sum", greedy]).to_pylist()
    return {(row["item_id"], row[option]): (row["logprob_sum"], bool(row[greedy])) for row in rows}


def lm_eval_scores(output_path: Path) -> Scores:
    """The per-choice log-likelihoods lm-eval logged (--log_samples) under `output_path`, keyed by
    the exported document id and the choice index."""
    files = sorted(output_path.rglob("samples_*.jsonl"))
    if not files:
        raise SystemExit(f"lm-eval wrote no samples_*.jsonl under {output_path}")
    scores: Scores = {}
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            sample = json.loads(line)
            for index, response in enumerate(sample["resps"]):
                logprob, greedy = response[0]
                scores[(sample["doc"]["id"], index)] = (float(logprob), str(greedy) == "True")
    return scores


def predictions(scores: Scores) -> dict[str, int]:
    """Per item, the option with the highest summed log-probability (lower index on ties)."""
    best: dict[str, tuple[float, int]] = {}
    for (item_id, index), (logprob, _) in scores.items():
        if item_id not in best or (logprob, -index) > (best[item_id][0], -best[item_id][1]):
            best[item_id] = (logprob, index)
    return {item_id: index for item_id, (_, index) in best.items()}


def crossknow_unscorable(run_dir: Path) -> set[str]:
    """Ids of the items a `crossknow evaluate` run recorded as unscorable (invalid.jsonl), which lm-eval scores
    anyway (e.g. a Japanese cloze item whose context and answer merge into one token)."""
    path = run_dir / "invalid.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return {record["item_id"] for record in map(json.loads, lines) if record["reason"].startswith("unscorable")}


def crossknow_rescored(run_dir: Path) -> int | None:
    """`items_rescored_float32` of a `crossknow evaluate` run's metrics.json: the items a low-precision run scored
    again in float32 (None where the run has no metrics.json yet)."""
    metrics = run_dir / "metrics.json"
    return json.loads(metrics.read_text(encoding="utf-8")).get("items_rescored_float32") if metrics.exists() else None


def compare(ours: Scores, theirs: Scores, atol: float = 1e-3, rtol: float = 1e-5) -> dict[str, float]:
    """Largest |difference| of summed log-probability, its largest fraction of the tolerance atol + rtol |sum|
    (above 1: outside it), greedy flags and predictions that agree.

    Raises SystemExit when the two do not hold the same (item, option) keys.
    """
    if ours.keys() != theirs.keys():
        missing, extra = sorted(ours.keys() - theirs.keys())[:5], sorted(theirs.keys() - ours.keys())[:5]
        raise SystemExit(f"the runs scored different options: only first {missing}, only second {extra}")
    ours_pred, theirs_pred = predictions(ours), predictions(theirs)
    return {
        "options": len(ours),
        "items": len(ours_pred),
        "max_abs_logprob_diff": max(abs(ours[key][0] - theirs[key][0]) for key in ours),
        "max_tolerance_fraction": max(abs(ours[key][0] - theirs[key][0]) / (atol + rtol * abs(theirs[key][0]))
                                      for key in ours),
        "greedy_agree": sum(ours[key][1] == theirs[key][1] for key in ours) / len(ours),
        "prediction_agree": sum(ours_pred[item] == theirs_pred[item] for item in ours_pred) / len(ours_pred),
    }
