"""Scoring throughput: crossknow vs lm-evaluation-harness (HF backend), same model, same requests.

Both tools score the same (context, continuation) requests, built by crossknow's `lm-eval` rule so
that lm-eval's own whitespace handling produces identical tokens. They use the same local model
directory (the embedded Gemma 3 270M as a plain checkpoint), the same dtype (float32), the same
device and the same batch size. The script prints items per second for both, the ratio, and the
largest difference in summed log-probability, per set and overall.

    .venv/bin/python bench/score_bench.py [--pitfalls-pairs 10] [--batch-size 8] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from crossknow.data.formats import load_item_set
from crossknow.models.checkpoint_cache import embedded_checkpoint
from crossknow.models.hf_scorer import HFScorer
from crossknow.scoring.rules import option_requests

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def item_sets(pitfalls_pairs: int) -> dict[str, list]:
    """The benchmark's sets: AdaXEval paper examples per language, and Japanese Pitfalls pairs."""
    examples = load_item_set(DATA / "adaxeval-paper-examples.jsonl").items
    pitfalls = load_item_set(DATA / "cross-lingual-pitfalls" / "Japanese.json", limit=pitfalls_pairs).items
    return {
        "adaxeval-en": [item for item in examples if item.lang == "en"],
        "adaxeval-ja": [item for item in examples if item.lang == "ja"],
        "pitfalls-ja": pitfalls,
    }


def time_lm_eval(lm, requests) -> tuple[float, list[float]]:
    from lm_eval.api.instance import Instance

    instances = [
        Instance(request_type="loglikelihood", doc={}, arguments=(r.context, r.continuation), idx=i)
        for i, r in enumerate(requests)
    ]
    start = time.perf_counter()
    results = lm.loglikelihood(instances, disable_tqdm=True)
    return time.perf_counter() - start, [logprob for logprob, _ in results]


def time_crossknow(scorer, requests) -> tuple[float, list[float]]:
    start = time.perf_counter()
    results = scorer.score(requests)
    return time.perf_counter() - start, [result.logprob_sum for result in results]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pitfalls-pairs", type=int, default=10, help="Japanese Pitfalls pairs (2 items each)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    import torch
    from lm_eval.models.huggingface import HFLM

    checkpoint = str(embedded_checkpoint())
    scorer = HFScorer(checkpoint, device="cpu", dtype="float32", batch_size=args.batch_size)
    lm = HFLM(pretrained=checkpoint, dtype="float32", device="cpu", batch_size=args.batch_size)
    print(f"model {checkpoint}; float32; cpu threads {torch.get_num_threads()}; batch size {args.batch_size}")

    warm = [r.request for r in option_requests(item_sets(1)["adaxeval-en"][0], "lm-eval")]
    time_crossknow(scorer, warm), time_lm_eval(lm, warm)

    rows, totals = [], {"items": 0, "ours": 0.0, "theirs": 0.0, "diff": 0.0}
    for name, items in item_sets(args.pitfalls_pairs).items():
        requests = [option.request for item in items for option in option_requests(item, "lm-eval")]
        ours_s, ours = time_crossknow(scorer, requests)
        theirs_s, theirs = time_lm_eval(lm, requests)
        diff = max(abs(a - b) for a, b in zip(ours, theirs, strict=True))
        rows.append({
            "set": name, "items": len(items), "requests": len(requests),
            "crossknow_items_per_s": len(items) / ours_s, "lm_eval_items_per_s": len(items) / theirs_s,
            "ratio": theirs_s / ours_s, "max_abs_logprob_diff": diff,
        })
        totals["items"] += len(items)
        totals["ours"] += ours_s
        totals["theirs"] += theirs_s
        totals["diff"] = max(totals["diff"], diff)
    rows.append({
        "set": "all", "items": totals["items"], "requests": sum(row["requests"] for row in rows),
        "crossknow_items_per_s": totals["items"] / totals["ours"],
        "lm_eval_items_per_s": totals["items"] / totals["theirs"],
        "ratio": totals["theirs"] / totals["ours"], "max_abs_logprob_diff": totals["diff"],
    })

    print(f"{'set':<13}{'items':>6}{'crossknow it/s':>16}{'lm-eval it/s':>14}{'ratio':>8}{'max |diff|':>12}")
    for row in rows:
        print(
            f"{row['set']:<13}{row['items']:>6}{row['crossknow_items_per_s']:>16.2f}"
            f"{row['lm_eval_items_per_s']:>14.2f}{row['ratio']:>7.1f}x{row['max_abs_logprob_diff']:>12.2e}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    if totals["diff"] >= 1e-3:
        raise SystemExit(f"numbers disagree: max |diff| {totals['diff']:.2e} >= 1e-3")


if __name__ == "__main__":
    main()
