"""`crossknow trace`: evaluate every checkpoint of a training run and write the dynamics report."""

from __future__ import annotations

from pathlib import Path

import typer

from crossknow.cli.consoles import console, errors
from crossknow.cli.options import config_command
from crossknow.cli.progress import bar
from crossknow.dynamics.trace_config import TraceConfig

commands = typer.Typer()
"""This module's command, which `crossknow.cli.app` imports when it is asked for (`crossknow.cli.lazy`)."""


def trace_with_progress(config: TraceConfig, out: Path, description: str = "tracing") -> Path:
    """`trace_and_report` with a progress bar, then the accuracy lines printed under a title that names the rule
    and the boundary rule; returns the report's path."""
    from crossknow.cli.tables import scoring_label
    from crossknow.report.run_report import accuracy_lines, trace_and_report

    with bar(errors, description) as update:
        report = trace_and_report(config, out, update)
    console.print(f"accuracy per condition ({scoring_label(config.rule, config.boundary)})", highlight=False)
    for line in accuracy_lines(out):
        console.print(line, highlight=False)
    return report


@config_command(commands, TraceConfig)
def trace(
    config: TraceConfig,
    out: Path = typer.Option(..., help="Run directory; run again on it to resume (and to add new checkpoints)."),
) -> None:
    """Score each checkpoint on each set (trace.parquet), then write report.html with the dynamics figures."""
    report = trace_with_progress(config, out)
    console.print(f"report: {report}", highlight=False, soft_wrap=True)
