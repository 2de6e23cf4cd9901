"""`crossknow pitfalls`: Cross-Lingual Pitfalls. `eval` answers bilingual pairs with any models (more to come:
probe, expand, affinity, finetune)."""

from __future__ import annotations

from pathlib import Path

import typer

from crossknow.cli.app import app, console, errors
from crossknow.cli.options import config_command
from crossknow.cli.progress import stage_bars
from crossknow.pitfalls.eval_records import PitfallsEvalConfig

pitfalls_app = typer.Typer(
    help="Cross-Lingual Pitfalls: questions that models answer in English but not in a target language.",
    no_args_is_help=True,
)
app.add_typer(pitfalls_app, name="pitfalls")

FLAGS = {"models": "--model", "timeout_s": "--timeout"}
"""Config fields whose option is not `--field-name`."""


@config_command(pitfalls_app, PitfallsEvalConfig, flags=FLAGS, name="eval")
def evaluate(
    config: PitfallsEvalConfig,
    out: Path = typer.Option(..., help="Run directory; run the same command again on it to resume."),
) -> None:
    """Answer both sides of every pair with every model; write pairs.parquet, metrics.json and report.html."""
    from crossknow.cli.progress import spent
    from crossknow.generation.structured import CostMeter
    from crossknow.pitfalls.evaluation import run_pitfalls_eval
    from crossknow.report.pitfalls_figures import pair_table_text, write_eval_report

    with stage_bars(errors) as update:
        metrics = run_pitfalls_eval(config, out, on_progress=update)
    console.print(pair_table_text(metrics), highlight=False, soft_wrap=True)
    meter = CostMeter(calls=metrics.calls, cached_calls=metrics.cached_calls, prompt_tokens=metrics.tokens,
                      cost_usd=metrics.cost_usd)
    pending = f"; {metrics.pending} answers failed in transport: run again to retry them" if metrics.pending else ""
    console.print(f"{metrics.n_usable} usable pairs of {metrics.n_read} read ({metrics.n_flawed} flawed, see "
                  f"invalid.jsonl); this run: {spent(meter)}; {metrics.seconds:.1f} s{pending}", highlight=False)
    console.print(f"report: {write_eval_report(out)}", highlight=False, soft_wrap=True)
