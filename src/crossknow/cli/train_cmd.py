"""`crossknow train`: continual pretraining with the paper's data recipes."""

from __future__ import annotations

from pathlib import Path

import typer

from crossknow.cli.app import app, console, errors
from crossknow.cli.options import config_command
from crossknow.cli.progress import bar
from crossknow.training.records import TrainConfig


@config_command(app, TrainConfig, comma_lists=("langs",))
def train(
    config: TrainConfig,
    out: Path = typer.Option(..., help="Run directory; run again on it to resume from the newest checkpoint."),
) -> None:
    """Continually pretrain a causal LM; write checkpoints, the per-step loss log and the training texts."""
    from crossknow.training.trainer import run_train

    with bar(errors, "training") as update:
        summary = run_train(config, out, update)
    console.print(
        f"{summary.steps} steps, {summary.tokens_seen} tokens, {len(summary.checkpoints)} checkpoints "
        f"({summary.trainable_parameters:,} of {summary.total_parameters:,} parameters trained) "
        f"in {summary.seconds:.0f} s; run directory: {out}", soft_wrap=True,
    )
