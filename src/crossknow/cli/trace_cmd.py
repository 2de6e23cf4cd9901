"""`crossknow trace`: evaluate every checkpoint of a training run and write the dynamics report."""

from __future__ import annotations

from pathlib import Path

import typer

from crossknow.cli.app import app, console, errors
from crossknow.cli.progress import bar


def accuracy_lines(report_dir: Path) -> list[str]:
    """'condition: first -> last' accuracy lines from a trace run directory's trace.parquet."""
    import pandas as pd

    from crossknow.dynamics.accuracy import accuracy_by_condition

    trace = pd.read_parquet(report_dir / "trace.parquet")
    table = accuracy_by_condition(trace)
    first, last = table["step"].min(), table["step"].max()
    lines = []
    for condition, rows in table.groupby("condition", sort=False):
        start = rows.loc[rows["step"] == first, "accuracy"].iloc[0]
        end = rows.loc[rows["step"] == last, "accuracy"].iloc[0]
        lines.append(f"{condition:<20} step {first}: {start:.3f}  ->  step {last}: {end:.3f}  ({int(rows['n_items'].iloc[0])} items)")
    return lines


@app.command()
def trace(
    checkpoints: list[str] = typer.Option(
        ..., help="A train run directory, a directory of checkpoint-STEP dirs, a model dir, default, or "
        "hf:ID@REVISION; [STEP=] prefix sets the step. Repeat for more."
    ),
    data: list[str] = typer.Option(..., help="Evaluation set FILE, or CONDITION=FILE. Repeat for more."),
    out: Path = typer.Option(..., help="Run directory; run again on it to resume (and to add new checkpoints)."),
    train_lang: str = typer.Option("en", help="Training language: labels items memorisation/intralingual/interlingual."),
    rule: str = typer.Option("adaxeval", help="adaxeval | lm-eval"),
    batch_size: int = typer.Option(8, help="Items per forward pass."),
    device: str = typer.Option("auto", help="auto | cpu | cuda[:N]"),
    dtype: str = typer.Option("float32", help="float32 | bfloat16 | float16"),
) -> None:
    """Score each checkpoint on each set (trace.parquet), then write report.html with the dynamics figures."""
    from crossknow.cli.report_cmd import rebuild_report
    from crossknow.dynamics.trace import TraceConfig, run_trace, copy_training_record

    config = TraceConfig(checkpoints=checkpoints, data=data, train_lang=train_lang, rule=rule,
                         batch_size=batch_size, device=device, dtype=dtype)
    with bar(errors, "tracing") as update:
        run_trace(config, out, update)
    copy_training_record(config.checkpoints, out)
    report = rebuild_report(out)
    for line in accuracy_lines(out):
        console.print(line, highlight=False)
    console.print(f"report: {report}", highlight=False, soft_wrap=True)
