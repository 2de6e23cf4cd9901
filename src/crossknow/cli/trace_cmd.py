"""`crossknow trace`: evaluate every checkpoint of a training run and write the dynamics report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from crossknow.cli.app import app, console, errors
from crossknow.cli.progress import bar

if TYPE_CHECKING:
    from crossknow.dynamics.trace_config import TraceConfig


def accuracy_lines(report_dir: Path) -> list[str]:
    """'condition: first -> last' accuracy lines, from the dynamics.json the report wrote in `report_dir`."""
    dynamics = json.loads((report_dir / "dynamics.json").read_text(encoding="utf-8"))
    steps = [entry["step"] for entry in dynamics["steps"]]
    first, last = min(steps), max(steps)
    by_key = {(row["step"], row["condition"]): row for row in dynamics["accuracy"]}
    lines = []
    for condition in dynamics["conditions"]:
        start, end = by_key[(first, condition)], by_key[(last, condition)]
        lines.append(f"{condition:<20} step {first}: {start['accuracy']:.3f}  ->  step {last}: "
                     f"{end['accuracy']:.3f}  ({end['n_items']} items)")
    return lines


def trace_and_report(config: TraceConfig, out: Path, description: str = "tracing") -> Path:
    """Score the checkpoints of `config` into `out` with a progress bar, write the report (with the
    training run's log and config when a source is one), print the accuracy lines; return the report's path."""
    from crossknow.cli.report_cmd import rebuild_report
    from crossknow.dynamics.trace import copy_training_record, run_trace

    with bar(errors, description) as update:
        run_trace(config, out, update)
    copy_training_record(config.checkpoints, out)
    report = rebuild_report(out)
    for line in accuracy_lines(out):
        console.print(line, highlight=False)
    return report


@app.command()
def trace(
    checkpoints: list[str] = typer.Option(
        ..., help="A train run directory, a directory of checkpoint-STEP dirs, a model dir, default, or "
        "hf:ID@REVISION; [STEP=] prefix sets the step. Repeat for more."
    ),
    data: list[str] = typer.Option(..., help="Evaluation set FILE, or CONDITION=FILE. Repeat for more."),
    out: Path = typer.Option(..., help="Run directory; run again on it to resume (and to add new checkpoints)."),
    train_lang: str = typer.Option("en", help="Training language: labels items by condition (memorisation, ...)."),
    rule: str = typer.Option("adaxeval", help="adaxeval | lm-eval"),
    batch_size: int = typer.Option(8, help="Items per forward pass."),
    device: str = typer.Option("auto", help="auto | cpu | cuda[:N]"),
    dtype: str = typer.Option("float32", help="float32 | bfloat16 | float16"),
) -> None:
    """Score each checkpoint on each set (trace.parquet), then write report.html with the dynamics figures."""
    from crossknow.dynamics.trace_config import TraceConfig

    config = TraceConfig(checkpoints=checkpoints, data=data, train_lang=train_lang, rule=rule,
                         batch_size=batch_size, device=device, dtype=dtype)
    report = trace_and_report(config, out)
    console.print(f"report: {report}", highlight=False, soft_wrap=True)
