"""`crossknow report --run DIR`: rebuild the dynamics report of a trace run directory."""

from __future__ import annotations

from pathlib import Path

import typer

from crossknow.cli.consoles import console

commands = typer.Typer()
"""This module's command, which `crossknow.cli.app` imports when it is asked for (`crossknow.cli.lazy`)."""


@commands.command()
def report(
    run: Path = typer.Option(..., help="Run directory of `crossknow trace` (holds trace.parquet)."),
    first_step: int | None = typer.Option(None, help="First checkpoint step compared by transitions and shapes."),
    last_step: int | None = typer.Option(None, help="Last checkpoint step compared by transitions and shapes."),
    out: Path | None = typer.Option(None, help="Write the report here instead of into the run directory."),
) -> None:
    """Rebuild the dynamics report (report.html, dynamics.json, figures/) of a trace run directory."""
    from crossknow.report.run_report import rebuild_report

    path = rebuild_report(run, first_step=first_step, last_step=last_step, out=out)
    console.print(str(path), highlight=False, soft_wrap=True)
