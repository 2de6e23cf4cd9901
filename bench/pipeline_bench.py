"""The commands' own path, timed as processes against lm-evaluation-harness and against the machine's floor.

In one run, on the embedded Gemma 3 270M as a plain checkpoint (the same model directory for every
tool), on the CPU, batch size 8:

1. `crossknow evaluate --model hf:DIR --rule lm-eval` and `lm_eval run --model hf` (on a task written
   by crossknow's exporter), each a process with model load, on the same items: real AdaXEval items
   (English and Japanese, half cloze, half question) and a Cross-Lingual Pitfalls set (English and
   Japanese questions of the first pairs). Both use lm-eval's rule, so they score the very same
   requests. Also a 1-item `evaluate` (the start-up: imports, model load, run files) and a
   `crossknow trace` sweep over the base model and 2 checkpoints of a tiny `crossknow train` run.
2. The FLOPs each tool needed, counted with the model's tokenizer and its config
   (formulas in bench/flop_counts.py): crossknow's necessary work (each item's context once, each
   option's continuation, the vocabulary projection only at scored positions) and lm-eval's own
   work (every request's full sequence, padded in batches, projected at every position).
3. The machine's matmul rate for the model's shapes (float32 and bfloat16, torch's thread count),
   the floor time = necessary FLOPs at that rate (bench/matmul_rate.py), and crossknow's fraction
   of it: floor / scoring time (evaluate process minus the 1-item process), and floor / process time.
4. `evaluate --dtype bfloat16` (with float32's decisions: the items its bound leaves open are scored
   again in float32, `items_rescored_float32`) and `--dtype bfloat16 --no-float32-decisions` (plain
   bfloat16) against float32: speed-up, prediction agreement (argmax of the summed log-probability),
   the largest |difference| of summed log-probability.
5. crossknow's summed log-probabilities against lm-eval's logged per-request log-likelihoods
   (--log_samples): the largest |difference|, checked against TOLERANCE + REL_TOLERANCE |sum|.
Peak RSS of every process comes from wait4. The table goes to stdout, every figure to a JSON file.

    .venv/bin/python bench/pipeline_bench.py [--quick] [--json OUT] [--work DIR] [--print OLD.json]
        [--release-sample FILE]

With --release-sample, a third set, `release`, times a sample of the real AdaXEval release (made by
bench/release_sample.py; `make bench ADAXEVAL_RELEASE=DIR` makes it) beside the paper examples.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from flop_counts import ModelShapes, Work, item_tokens, lm_eval_work, necessary_work
from matmul_rate import MatmulRates, measure_rates
from run_outputs import compare, crossknow_rescored, crossknow_scores, crossknow_unscorable, lm_eval_scores
from timed_process import ProcessRun, run_timed

SHARED = Path(os.environ.get("CROSSKNOW_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
RESULTS = Path(__file__).resolve().parent / "results"
TOLERANCE = 1e-3
REL_TOLERANCE = 1e-5
"""Largest |difference| of a summed log-probability allowed between crossknow and lm-eval, float32: TOLERANCE +
REL_TOLERANCE |sum| nats (the real release's long cloze answers sum to -463 nats)."""
BATCH_SIZE = 8
MIN_SCORING_S = 1.0
"""Scoring times (process minus start-up) below this are taken as noise."""
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def select_items(quick: bool) -> dict[str, tuple[list, list[str]]]:
    """Per set, its items and the `--data/--limit` arguments that make `evaluate` read exactly them."""
    from crossknow.data.adaxeval import read_adaxeval
    from crossknow.data.pitfalls import read_pitfalls

    items = read_adaxeval(SHARED / "adaxeval-paper-examples.jsonl").items  # a cloze and a question per example
    per_lang = 6 if quick else None
    adaxeval = [item for lang in ("en", "ja") for item in [i for i in items if i.lang == lang][:per_lang]]
    pairs = 3 if quick else 10
    pitfalls_file = SHARED / "cross-lingual-pitfalls" / "Japanese.json"
    pitfalls = read_pitfalls(pitfalls_file, limit=pairs).items
    return {"adaxeval": (adaxeval, []), "pitfalls": (pitfalls, ["--data", str(pitfalls_file), "--limit", str(pairs)])}


def tool(name: str) -> str:
    """The console script `name` of this Python environment."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise SystemExit(f"{path} is missing: install the project with `make install`")
    return str(path)


def evaluate_argv(model_dir: Path, data_args: list[str], out: Path, dtype: str, *extra: str) -> list[str]:
    """`crossknow evaluate` on the model directory with lm-eval's rule (`extra`: more options)."""
    return [tool("crossknow"), "evaluate", "--model", f"hf:{model_dir}", *data_args, "--out", str(out),
            "--device", "cpu", "--dtype", dtype, "--rule", "lm-eval", "--batch-size", str(BATCH_SIZE), *extra]


def lm_eval_argv(model_dir: Path, include: Path, group: str, out: Path) -> list[str]:
    """lm-eval's HF backend on an exported task group, logging every request's log-likelihood."""
    return [tool("lm_eval"), "run", "--model", "hf", "--model_args", f"pretrained={model_dir},dtype=float32",
            "--include_path", str(include), "--tasks", group, "--device", "cpu", "--batch_size", str(BATCH_SIZE),
            "--log_samples", "--output_path", str(out)]


def count_work(tokenizer, shapes: ModelShapes, items: list) -> tuple[Work, Work, dict[str, float]]:
    """crossknow's necessary work, lm-eval's work, and token statistics of `items` (lm-eval's rule)."""
    from crossknow.scoring.rules import option_requests

    tokens = []
    for item in items:
        requests = [(o.request.context, o.request.continuation) for o in option_requests(item, "lm-eval")]
        tokens.append(item_tokens(tokenizer.encode, requests))
    stats = {
        "requests": sum(len(t.continuations) for t in tokens),
        "mean_context_tokens": sum(len(t.context) for t in tokens) / len(tokens),
        "mean_continuation_tokens": sum(len(c) for t in tokens for c in t.continuations)
        / sum(len(t.continuations) for t in tokens),
    }
    return necessary_work(shapes, tokens), lm_eval_work(shapes, tokens, BATCH_SIZE), stats


def tiny_checkpoints(model_dir: Path, work: Path) -> Path:
    """A `crossknow train` run of 2 steps on 6 English demo documents, a checkpoint after each step."""
    from importlib import resources

    demo = Path(str(resources.files("crossknow") / "samples" / "demo"))
    corpus = work / "train-corpus.jsonl"
    lines = [line for line in (demo / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
             if json.loads(line)["lang"] == "en"][:6]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = work / "train"
    run_timed("train (setup)", [
        tool("crossknow"), "train", "--model", f"hf:{model_dir}", "--corpus", str(corpus), "--out", str(out),
        "--langs", "en", "--max-steps", "2", "--save-every-steps", "1", "--batch-size", "2", "--max-length", "48",
        "--train-layers", "last:1", "--learning-rate", "1e-3", "--device", "cpu",
    ], work / "logs" / "train.log", OFFLINE)
    return out


class Processes:
    """The bench's timed processes, by key, with the 1-minute load average at the end of each."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.runs: dict[str, ProcessRun] = {}
        self.loads: dict[str, float] = {}

    def run(self, key: str, argv: list[str]) -> ProcessRun:
        """Run and record one process; its output goes to logs/KEY.log."""
        print(f"  running {key} ...", file=sys.stderr, flush=True)
        self.runs[key] = run_timed(key, argv, self.logs / f"{key}.log", OFFLINE)
        self.loads[key] = os.getloadavg()[0]
        return self.runs[key]


def _measurable(seconds: float) -> float:
    return seconds if seconds >= MIN_SCORING_S else float("nan")


def set_figures(name: str, items: list, necessary: Work, theirs_work: Work, stats: dict, work: Path,
                runs: dict[str, ProcessRun], rates: dict[str, MatmulRates]) -> dict:
    """The figures of one set from its processes' times and outputs and its FLOP counts (the bfloat16 ones where
    the bfloat16 processes ran)."""
    ours, theirs = runs[f"evaluate-{name}"], runs[f"lm_eval-{name}"]
    # Scoring = the process minus the 1-item process; under a heavy load the difference can vanish in the
    # noise, and a figure derived from less than MIN_SCORING_S is reported as NaN rather than as a huge ratio.
    scoring = _measurable(ours.seconds - runs["startup-float32"].seconds)
    floor = rates["float32"].floor_seconds(necessary)
    unscorable = crossknow_unscorable(work / f"ck-{name}")  # lm-eval scores them; they are left out of the comparison
    ours_scores = crossknow_scores(work / f"ck-{name}")
    figures = {
        "items": len(items), **stats,
        "crossknow_s": ours.seconds, "lm_eval_s": theirs.seconds, "ratio": theirs.seconds / ours.seconds,
        "crossknow_scoring_s": scoring,
        "crossknow_tflop": necessary.total / 1e12, "lm_eval_tflop": theirs_work.total / 1e12,
        "flop_ratio": theirs_work.total / necessary.total,
        "crossknow_work": asdict(necessary), "lm_eval_work": asdict(theirs_work),
        "floor_float32_s": floor,
        "floor_fraction_scoring": floor / scoring, "floor_fraction_process": floor / ours.seconds,
        "crossknow_gflops_scoring": necessary.total / scoring / 1e9,
        "lm_eval_gflops_process": theirs_work.total / theirs.seconds / 1e9,
        "crossknow_peak_rss_mb": ours.peak_rss_mb, "lm_eval_peak_rss_mb": theirs.peak_rss_mb,
        "vs_lm_eval": {**compare(ours_scores,
                                 {key: value for key, value in lm_eval_scores(work / f"lm-{name}").items()
                                  if key[0] not in unscorable}, TOLERANCE, REL_TOLERANCE),
                       "unscorable_by_crossknow": len(unscorable)},
    }
    if f"evaluate-{name}-bf16" not in runs:
        return figures
    bf16, plain = runs[f"evaluate-{name}-bf16"], runs[f"evaluate-{name}-bf16-plain"]
    scoring_bf16 = _measurable(bf16.seconds - runs["startup-bfloat16"].seconds)
    return figures | {
        "floor_bfloat16_s": rates["bfloat16"].floor_seconds(necessary),
        "bf16_s": bf16.seconds, "bf16_scoring_s": scoring_bf16, "bf16_speedup_scoring": scoring / scoring_bf16,
        "bf16_speedup_process": ours.seconds / bf16.seconds, "bf16_peak_rss_mb": bf16.peak_rss_mb,
        "bf16_items_rescored_float32": crossknow_rescored(work / f"ck-{name}-bf16"),
        "bf16_plain_s": plain.seconds, "bf16_plain_speedup_process": ours.seconds / plain.seconds,
        "bf16_plain_peak_rss_mb": plain.peak_rss_mb,
        "bf16_vs_float32": compare(ours_scores, crossknow_scores(work / f"ck-{name}-bf16")),
        "bf16_plain_vs_float32": compare(ours_scores, crossknow_scores(work / f"ck-{name}-bf16-plain")),
    }


def run_bench(quick: bool, work: Path, release_sample: Path | None = None, bf16: bool = True) -> dict:
    """Run every process of the bench in `work` and return all figures; with `release_sample` (a file of
    bench/release_sample.py), its items are a third set, `release`, timed the same way; without `bf16`, no
    bfloat16 process or matmul rate."""
    import torch
    from transformers import AutoTokenizer

    from crossknow.data.jsonl import write_jsonl
    from crossknow.data.lmeval_export import export_lm_eval
    from crossknow.models.checkpoint_cache import embedded_checkpoint

    started = time.time()
    model_dir = embedded_checkpoint()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    shapes = ModelShapes.from_model_dir(model_dir)
    sets = select_items(quick)
    adaxeval_file = write_jsonl(work / "adaxeval.jsonl", sets["adaxeval"][0])
    sets["adaxeval"] = (sets["adaxeval"][0], ["--data", str(adaxeval_file)])
    if release_sample:
        from crossknow.data.formats import load_item_set

        sets["release"] = (load_item_set(release_sample).items, ["--data", str(release_sample)])
    processes = Processes(work / "logs")

    dtypes = ("float32", "bfloat16") if bf16 else ("float32",)
    rates = {dtype: measure_rates(shapes, dtype) for dtype in dtypes}
    matmul_load = os.getloadavg()[0]
    for dtype in dtypes:
        one_item = ["--data", str(adaxeval_file), "--limit", "1"]
        processes.run(f"startup-{dtype}", evaluate_argv(model_dir, one_item, work / f"startup-{dtype}", dtype))
    figures: dict[str, dict] = {}
    for name, (items, data_args) in sets.items():
        task, group = work / f"task-{name}", f"ck_{name}"
        export_lm_eval(items, task, group)
        processes.run(f"evaluate-{name}", evaluate_argv(model_dir, data_args, work / f"ck-{name}", "float32"))
        processes.run(f"lm_eval-{name}", lm_eval_argv(model_dir, task, group, work / f"lm-{name}"))
        if bf16:
            bf16_out = work / f"ck-{name}-bf16"
            processes.run(f"evaluate-{name}-bf16", evaluate_argv(model_dir, data_args, bf16_out, "bfloat16"))
            processes.run(f"evaluate-{name}-bf16-plain", evaluate_argv(
                model_dir, data_args, work / f"ck-{name}-bf16-plain", "bfloat16", "--no-float32-decisions"))
        necessary, theirs_work, stats = count_work(tokenizer, shapes, items)
        figures[name] = set_figures(name, items, necessary, theirs_work, stats, work, processes.runs, rates)

    train_run = tiny_checkpoints(model_dir, work)
    checkpoints = 1 + len([path for path in (train_run / "checkpoints").iterdir() if path.is_dir()])
    trace = processes.run("trace", [
        tool("crossknow"), "trace", "--checkpoints", str(train_run), "--data", str(adaxeval_file),
        "--out", str(work / "trace"), "--train-lang", "en", "--rule", "lm-eval", "--device", "cpu",
        "--batch-size", str(BATCH_SIZE)])
    one = processes.runs["evaluate-adaxeval"].seconds
    figures["trace"] = {"checkpoints": checkpoints, "seconds": trace.seconds,
                        "per_checkpoint_s": trace.seconds / checkpoints, "single_evaluations": trace.seconds / one,
                        "peak_rss_mb": trace.peak_rss_mb}

    result = {
        "model_dir": str(model_dir), "torch": torch.__version__, "threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(), "batch_size": BATCH_SIZE, "quick": quick, "bf16": bf16, "tolerance": TOLERANCE,
        "rel_tolerance": REL_TOLERANCE,
        "shapes": asdict(shapes), "matmul_load_avg_1min": matmul_load,
        "matmul": {dtype: {**rate.summary(), "detail": [asdict(r) for r in rate.layer] + [asdict(rate.projection)]}
                   for dtype, rate in rates.items()},
        "sets": figures,
        "processes": {key: {**asdict(run), "log": str(run.log), "load_avg_1min": processes.loads[key]}
                      for key, run in processes.runs.items()},
        "bench_seconds": time.time() - started,
    }
    result["goals"] = goals(result)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="12 AdaXEval items (3 examples a language), 3 pairs")
    parser.add_argument("--json", type=Path, help="figures file (default bench/results/pipeline-TIME.json)")
    parser.add_argument("--work", type=Path, help="keep runs, logs and checkpoints here (default: a temp dir, removed)")
    parser.add_argument("--print", type=Path, dest="show", help="only print the table of an earlier figures file")
    parser.add_argument("--release-sample", type=Path,
                        help="also time these AdaXEval release items (a file of bench/release_sample.py)")
    parser.add_argument("--bf16", choices=("auto", "always", "never"), default="auto",
                        help="the bfloat16 processes: auto runs them where the CPU computes bfloat16 natively (an "
                        "emulated bfloat16 run takes over ten times float32's, past 25 minutes on 2 AVX2 cores)")
    args = parser.parse_args()
    if args.show:
        print_table(json.loads(args.show.read_text(encoding="utf-8")))
        return
    from crossknow.models.hf_loading import cpu_has_native_bf16

    bf16 = args.bf16 == "always" or (args.bf16 == "auto" and cpu_has_native_bf16())
    if not bf16:
        print("bfloat16 processes left out (--bf16 never, or no native bfloat16 on this CPU)", file=sys.stderr)
    if args.work:
        args.work.mkdir(parents=True, exist_ok=True)
        result = run_bench(args.quick, args.work, args.release_sample, bf16)
    else:
        with tempfile.TemporaryDirectory(prefix="crossknow-bench-") as work:
            result = run_bench(args.quick, Path(work), args.release_sample, bf16)
    out = args.json or RESULTS / f"pipeline-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print_table(result)
    print(f"\nfigures: {out}")
    worst = max(figures["vs_lm_eval"]["max_tolerance_fraction"] for figures in result["sets"].values()
                if "vs_lm_eval" in figures)
    if worst > 1:
        raise SystemExit(f"crossknow and lm-eval disagree: a |diff| is {worst:.2f} of the tolerance "
                         f"{TOLERANCE:.0e} + {REL_TOLERANCE:.0e} |sum|")


def goals(result: dict) -> list[dict]:
    """The speed and agreement goals (docs/speed.md), each with the measured value and whether it is met."""
    sets, startup = result["sets"], result["processes"]["startup-float32"]["seconds"]
    bf16 = result.get("bf16", True)
    checks = [
        ("fraction of the float32 floor, AdaXEval scoring", sets["adaxeval"]["floor_fraction_scoring"], ">=", 0.75),
        ("start-up (1-item evaluate process), s", startup, "<", 3.0),
        ("process speed-up over lm-eval, AdaXEval", sets["adaxeval"]["ratio"], ">=", 2.0),
        ("process speed-up over lm-eval, Pitfalls", sets["pitfalls"]["ratio"], ">=", sets["adaxeval"]["ratio"]),
        ("trace per checkpoint / one evaluate (7 checkpoints < 3 evaluations)",
         sets["trace"]["per_checkpoint_s"] / result["processes"]["evaluate-adaxeval"]["seconds"], "<", 3 / 7),
    ]
    if bf16:
        bf16_agree = min(sets[name]["bf16_vs_float32"]["prediction_agree"] for name in ("adaxeval", "pitfalls"))
        checks += [("bfloat16 scoring speed-up, AdaXEval", sets["adaxeval"]["bf16_speedup_scoring"], ">=", 3.0),
                   ("bfloat16 predictions equal to float32 (worst set)", bf16_agree, ">=", 0.99)]
    if "release" in sets:
        release = sets["release"]
        checks.append(("process speed-up over lm-eval, AdaXEval release sample", release["ratio"], ">=", 1.85))
    if "release" in sets and bf16:
        checks += [
            ("bfloat16 with float32's decisions over float32, release sample, process",
             release["bf16_speedup_process"], ">=", 1.35),
            ("bfloat16 with float32's decisions: predictions equal to float32, release and Pitfalls",
             min(sets[name]["bf16_vs_float32"]["prediction_agree"] for name in ("release", "pitfalls")), ">=", 1.0),
        ]
    return [{"goal": goal, "value": value, "op": op, "target": target, "met": value >= target if op == ">=" else
             value < target} for goal, value, op, target in checks]


def print_table(result: dict) -> None:
    """The figures of `result` (the JSON file's content) as plain text."""
    sets = {name: figures for name, figures in result["sets"].items() if name != "trace"}
    print(f"model {result['model_dir']}; cpu; torch {result['torch']}, {result['threads']} threads; "
          f"batch size {result['batch_size']}")
    print("\nas processes, model load included (float32):")
    print(f"{'set':<10}{'items':>6}{'reqs':>6}{'ctx tok':>8}{'crossknow s':>12}{'lm-eval s':>10}{'ratio':>7}"
          f"{'ck TFLOP':>9}{'lm TFLOP':>9}{'FLOP ratio':>11}{'ck MiB':>8}{'lm MiB':>8}")
    for name, f in sets.items():
        print(f"{name:<10}{f['items']:>6}{f['requests']:>6}{f['mean_context_tokens']:>8.0f}{f['crossknow_s']:>12.1f}"
              f"{f['lm_eval_s']:>10.1f}{f['ratio']:>6.2f}x{f['crossknow_tflop']:>9.3f}{f['lm_eval_tflop']:>9.3f}"
              f"{f['flop_ratio']:>10.2f}x{f['crossknow_peak_rss_mb']:>8.0f}{f['lm_eval_peak_rss_mb']:>8.0f}")
    print(f"\nmatmul rate for the model's shapes ({result['threads']} threads, load average "
          f"{result['matmul_load_avg_1min']:.2f}), GFLOP/s:")
    for dtype, s in result["matmul"].items():
        print(f"  {dtype:<9} layer matrices {s['layer_min_gflops']:.0f}-{s['layer_max_gflops']:.0f} "
              f"(combined {s['layer_gflops']:.0f}), vocabulary projection {s['projection_gflops']:.0f}")
    startups = {key.removeprefix("startup-"): process["seconds"] for key, process in result["processes"].items()
                if key.startswith("startup-")}
    print("\nstart-up (1-item evaluate process): " + ", ".join(f"{dtype} {s:.1f} s" for dtype, s in startups.items()))
    print("floor (necessary FLOPs at the float32 matmul rate) against crossknow:")
    print(f"{'set':<10}{'floor s':>8}{'scoring s':>10}{'fraction':>9}{'GFLOP/s':>9}{'process s':>10}{'fraction':>9}"
          f"{'lm-eval GFLOP/s':>16}")
    for name, f in sets.items():
        print(f"{name:<10}{f['floor_float32_s']:>8.1f}{f['crossknow_scoring_s']:>10.1f}{f['floor_fraction_scoring']:>9.0%}"
              f"{f['crossknow_gflops_scoring']:>9.0f}{f['crossknow_s']:>10.1f}{f['floor_fraction_process']:>9.0%}"
              f"{f['lm_eval_gflops_process']:>16.0f}")
    if result.get("bf16", True):
        print_bf16(sets)
    else:
        print("\nbfloat16: not run (no native bfloat16 on this CPU, or --bf16 never)")
    print_agreement_and_goals(result, sets)


def print_bf16(sets: dict) -> None:
    """The bfloat16 rows of the table."""
    print("\nbfloat16 with float32's decisions against float32 (crossknow evaluate):")
    print(f"{'set':<10}{'bf16 s':>8}{'speed-up scoring':>17}{'process':>8}{'same prediction':>16}{'max |d sum|':>12}"
          f"{'bf16 floor s':>13}{'re-scored':>10}")
    for name, f in sets.items():
        c = f["bf16_vs_float32"]
        print(f"{name:<10}{f['bf16_s']:>8.1f}{f['bf16_speedup_scoring']:>16.2f}x{f['bf16_speedup_process']:>7.2f}x"
              f"{c['prediction_agree']:>16.1%}{c['max_abs_logprob_diff']:>12.3f}{f['floor_bfloat16_s']:>13.1f}"
              f"{f['bf16_items_rescored_float32']:>6}/{f['items']}")
    print("plain bfloat16 (--no-float32-decisions) against float32:")
    print(f"{'set':<10}{'bf16 s':>8}{'process':>8}{'same prediction':>16}{'max |d sum|':>12}{'peak MiB':>9}")
    for name, f in sets.items():
        c = f["bf16_plain_vs_float32"]
        print(f"{name:<10}{f['bf16_plain_s']:>8.1f}{f['bf16_plain_speedup_process']:>7.2f}x"
              f"{c['prediction_agree']:>16.1%}{c['max_abs_logprob_diff']:>12.3f}{f['bf16_plain_peak_rss_mb']:>9.0f}")


def print_agreement_and_goals(result: dict, sets: dict) -> None:
    """The agreement with lm-eval, the trace sweep, the goals and the load of the table."""
    print(f"\ncrossknow against lm-eval, same requests (tolerance {result['tolerance']:.0e} nats "
          f"+ {result.get('rel_tolerance', 0):.0e} |sum|):")
    for name, f in sets.items():
        c = f["vs_lm_eval"]
        print(f"  {name:<10} {c['options']} requests: max |diff| {c['max_abs_logprob_diff']:.2e}; greedy flags agree "
              f"{c['greedy_agree']:.1%}; predictions agree {c['prediction_agree']:.1%}"
              + (f"; {c['unscorable_by_crossknow']} items unscorable by crossknow's rule, left out"
                 if c.get("unscorable_by_crossknow") else ""))
    t = result["sets"]["trace"]
    print(f"\ntrace sweep: {t['checkpoints']} checkpoints in {t['seconds']:.1f} s as a process "
          f"({t['per_checkpoint_s']:.1f} s per checkpoint; {t['single_evaluations']:.2f} single evaluations); "
          f"peak {t['peak_rss_mb']:.0f} MiB")
    print("\ngoals:")
    for goal in result["goals"]:
        print(f"  {'met    ' if goal['met'] else 'NOT met'} {goal['goal']}: {goal['value']:.3g} "
              f"(goal {goal['op']} {goal['target']:.3g})")
    loads = [process["load_avg_1min"] for process in result["processes"].values()]
    print(f"\nload average (1 min) at the end of each process: {min(loads):.2f} to {max(loads):.2f} "
          f"on {result['cpu_count']} CPUs (a shared machine makes every time above noisy)")


if __name__ == "__main__":
    main()
