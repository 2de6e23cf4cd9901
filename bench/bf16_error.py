"""How far bfloat16 scoring moves an option's summed log-probability from float32's, per scored token.

Scores the same options twice with a local model (the embedded Gemma 3 270M by default), in float32 and
in bfloat16, through crossknow's scorer and rules: every item of adaxeval-paper-examples.jsonl
(adaxeval rule) and the first pairs of several Cross-Lingual Pitfalls files (lm-eval rule). Prints the
largest error |sum_bf16 - sum_fp32| per square root of the option's tokens (the form of
`crossknow.scoring.refine.BF16_ERROR`), the per-token error's quantiles, and for the bound the module
states: how many items it leaves open for float32 re-scoring, and whether every item whose bf16
prediction differs from float32's (under any normalisation) is among them. The figures go to stdout;
they and every option's numbers in both dtypes to a JSON file. With --items FILE, the items of FILE (any
file `evaluate` reads, e.g. a sample of the AdaXEval release by bench/release_sample.py) under --rule are
scored instead.

    .venv/bin/python bench/bf16_error.py [--pairs 40] [--items FILE [--rule lm-eval]] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path

SHARED = Path(os.environ.get("CROSSKNOW_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
PITFALLS = ("Japanese", "French", "Chinese", "Arabic", "Swahili", "Hindi")
"""Pitfalls files whose first pairs are scored (English and the other language of each pair)."""


def items_and_rules(pairs: int, items: Path | None = None, rule: str = "lm-eval") -> list[tuple[object, str]]:
    """(item, rule) for the paper examples and the first `pairs` pairs of each Pitfalls file; with `items`,
    every item of that file under `rule` instead."""
    from crossknow.data.formats import load_item_set

    if items is not None:
        return [(item, rule) for item in load_item_set(items).items]
    chosen = [(item, "adaxeval") for item in load_item_set(SHARED / "adaxeval-paper-examples.jsonl").items]
    for name in PITFALLS:
        chosen += [(item, "lm-eval") for item in
                   load_item_set(SHARED / "cross-lingual-pitfalls" / f"{name}.json", limit=pairs).items]
    return chosen


def score_all(scorer, chosen) -> list[list[tuple[float, int, int, int]]]:
    """Per item, per option: (logprob_sum, n_tokens, n_chars, n_bytes), all items in one scorer call."""
    from crossknow.scoring.rules import option_requests

    per_item = [option_requests(item, rule) for item, rule in chosen]
    results = scorer.score([option.request for options in per_item for option in options])
    out, start = [], 0
    for options in per_item:
        mine, start = results[start : start + len(options)], start + len(options)
        out.append([(r.logprob_sum, r.n_tokens, len(o.norm_text), len(o.norm_text.encode("utf-8")))
                    for o, r in zip(options, mine, strict=True)])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--items", type=Path, help="score this item file instead of the default set")
    parser.add_argument("--rule", default="lm-eval", choices=("adaxeval", "lm-eval"), help="the rule of --items")
    parser.add_argument("--model", default="default", help="model spec (a local model)")
    parser.add_argument("--json", type=Path, default=Path(__file__).resolve().parent / "results" / "bf16_error.json")
    args = parser.parse_args()
    from crossknow.models.registry import ModelOptions, load_scorer
    from crossknow.scoring.normalise import Normalisation, OptionScore, predict
    from crossknow.scoring.refine import BF16_ERROR, needs_float32

    chosen = items_and_rules(args.pairs, args.items, args.rule)
    full = score_all(load_scorer(args.model, ModelOptions(device="cpu", dtype="float32")), chosen)
    half = score_all(load_scorer(args.model, ModelOptions(device="cpu", dtype="bfloat16")), chosen)
    pairs = [(f, h) for fi, hi in zip(full, half, strict=True) for f, h in zip(fi, hi, strict=True)]
    per_token = sorted(abs(h[0] - f[0]) / f[1] for f, h in pairs)
    differing, flagged, missed = 0, 0, 0
    for fi, hi in zip(full, half, strict=True):
        f_opts, h_opts = [OptionScore(*o) for o in fi], [OptionScore(*o) for o in hi]
        differs = any(predict(f_opts, n) != predict(h_opts, n) for n in Normalisation)
        flag = needs_float32(h_opts)
        differing += differs
        flagged += flag
        missed += differs and not flag
    quantile = lambda q: per_token[min(len(per_token) - 1, int(q * len(per_token)))]  # noqa: E731
    figures = {
        "items": len(chosen), "options": len(per_token),
        "per_token_error_max": per_token[-1], "per_token_error_p50": quantile(0.5),
        "per_token_error_p99": quantile(0.99), "bound": BF16_ERROR,
        "error_per_sqrt_token_max": max(abs(h[0] - f[0]) / math.sqrt(f[1]) for f, h in pairs),
        "items_whose_bf16_prediction_differs": differing, "items_flagged": flagged,
        "differing_items_not_flagged": missed,
    }
    print(json.dumps(figures, indent=2))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(figures | {"float32": full, "bfloat16": half}) + "\n")


if __name__ == "__main__":
    main()
