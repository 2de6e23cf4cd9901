"""`crossknow trace-sequences`: the loss of training sequences and their perturbations at every checkpoint."""

from __future__ import annotations

from pathlib import Path

import typer

from crossknow.cli.consoles import console, errors
from crossknow.cli.options import config_command
from crossknow.cli.progress import bar
from crossknow.dynamics.sequence_inputs import SequenceLossConfig

commands = typer.Typer()
"""This module's command, which `crossknow.cli.app` imports when it is asked for (`crossknow.cli.lazy`)."""


@config_command(commands, SequenceLossConfig, name="trace-sequences")
def trace_sequences(
    config: SequenceLossConfig,
    out: Path = typer.Option(..., help="Run directory; run again on it to resume (and to add new checkpoints)."),
    pos_loss: str = typer.Option(
        "absolute", help="Fig. 11's POS panel (with --per-token): 'absolute' plots the mean token loss, as the paper; "
        "'relative' its change since the first checkpoint.", metavar="[absolute|relative]",
    ),
) -> None:
    """Score every sequence of --variants at each checkpoint (sequence_loss.parquet, and token_loss.parquet with
    --per-token), then write report.html with the paper's Figs. 5-9 for the perturbations present."""
    from crossknow.dynamics.sequence_loss import run_sequence_loss
    from crossknow.errors import CrossknowError
    from crossknow.report.perturbation_report import findings_of_run, write_perturbation_report

    if pos_loss not in ("absolute", "relative"):
        raise CrossknowError(f"--pos-loss must be absolute or relative, got {pos_loss!r}")
    with bar(errors, "scoring sequences") as update:
        run_sequence_loss(config, out, update)
    report = write_perturbation_report(out, pos_relative=pos_loss == "relative")
    for line in findings_of_run(out):
        console.print(line, highlight=False, soft_wrap=True)
    console.print(f"report: {report}", highlight=False, soft_wrap=True)
