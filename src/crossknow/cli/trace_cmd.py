"""`crossknow trace`: evaluate every checkpoint of a training run and write the dynamics report."""

from __future__ import annotations

from pathlib import Path

import typer

from crossknow.cli.consoles import console, errors
from crossknow.cli.options import config_command
from crossknow.cli.phases import Phases
from crossknow.cli.progress import bar
from crossknow.dynamics.trace_config import TraceConfig

commands = typer.Typer()
"""This module's command, which `crossknow.cli.app` imports when it is asked for (`crossknow.cli.lazy`)."""


def trace_with_progress(config: TraceConfig, out: Path, description: str = "tracing",
                        phases: Phases | None = None) -> Path:
    """Score the checkpoints with a progress bar, write the report, then print the accuracy lines under a title that
    names the rule and the boundary rule; returns the report's path. `phases` counts the scoring (checkpoints loaded
    as they come) as 'score' and the report as 'report'."""
    from crossknow.cli.tables import scoring_label
    from crossknow.dynamics.trace import copy_training_record, run_trace
    from crossknow.report.run_report import accuracy_lines, rebuild_report

    phases = phases or Phases()
    with phases("score"), bar(errors, description) as update:
        run_trace(config, out, update)
    with phases("report"):
        copy_training_record(config.checkpoints.specs, out)
        report = rebuild_report(out)
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
