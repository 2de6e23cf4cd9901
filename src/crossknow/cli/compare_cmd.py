"""`crossknow compare RUN_DIR... --out DIR`: trace runs of several training recipes side by side (section 6)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from crossknow.cli.consoles import console, errors

commands = typer.Typer()
"""This module's command, which `crossknow.cli.app` imports when it is asked for (`crossknow.cli.lazy`)."""


@commands.command()
def compare(
    runs: list[Path] = typer.Argument(..., metavar="RUN_DIR", help="Run directories of `crossknow trace`, one per "
                                      "recipe; the first is the reference (put the baseline first)."),
    label: list[str] = typer.Option([], help="A run's label, one per run in order (default: the recipe its training "
                                    "run's config records, else the directory's name)."),
    out: Path = typer.Option(..., help="Where to write report.html, comparison.json and figures/."),
    x: str = typer.Option("step", help="The curves' x axis: 'step', or 'progress' (step / the run's last step, for "
                          "runs of different lengths)."),
) -> None:
    """Compare trace runs of several training recipes: the best recipe per condition, the final numbers, and
    accuracy and loss per condition over training, side by side."""
    from crossknow.errors import CrossknowError
    from crossknow.report.comparison_report import compare_runs

    if x not in ("step", "progress"):
        raise CrossknowError(f"--x {x!r}: use 'step' or 'progress'")
    path, comparison = compare_runs(runs, out, labels=label, x=x)  # type: ignore[arg-type]
    for note in comparison.notes:
        errors.print(f"[yellow]warning:[/yellow] {escape(note)}", highlight=False, soft_wrap=True)
    table = Table(title=f"final accuracy per condition (reference: {comparison.reference})")
    for header in ("condition", "best recipe", "final accuracy", f"vs {comparison.reference}"):
        table.add_column(header, justify="left" if header in ("condition", "best recipe") else "right")
    for row in comparison.best.itertuples():
        table.add_row(row.condition, " = ".join(row.labels), f"{row.accuracy_last:.3f}", f"{row.vs_reference:+.3f}")
    console.print(table)
    console.print(f"report: {path}", highlight=False, soft_wrap=True)
