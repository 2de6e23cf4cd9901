"""`crossknow pitfalls finetune`: targeted fine-tuning on one language, evaluated on every language (section 3.4)."""

from __future__ import annotations

from pathlib import Path

import typer

from crossknow.cli.consoles import console, errors
from crossknow.cli.options import config_command
from crossknow.cli.progress import stage_bars
from crossknow.pitfalls.finetune.records import PitfallsFinetuneConfig

commands = typer.Typer()
"""This module's sub-command, which `crossknow.cli.pitfalls_cmd` imports when it is asked for."""


@config_command(commands, PitfallsFinetuneConfig, name="finetune")
def finetune(
    config: PitfallsFinetuneConfig,
    out: Path = typer.Option(..., help="Run directory; run the same command again on it to resume."),
) -> None:
    """Evaluate the base model, fine-tune it on the pairs of one language (SFT or DPO, the paper's settings by
    default), evaluate the fine-tuned checkpoint; print Table 2 and write metrics.json and report.html."""
    from crossknow.pitfalls.finetune.run import run_pitfalls_finetune
    from crossknow.report.pitfalls_finetune_report import table_text, write_finetune_report

    with stage_bars(errors) as update:
        metrics = run_pitfalls_finetune(config, out, on_progress=update)
    console.print(table_text(metrics), highlight=False, soft_wrap=True, markup=False)
    training = metrics.training
    console.print(f"{training.method}: {training.train_examples} training and {training.validation_examples} "
                  f"validation examples, {training.steps} steps, validation loss "
                  f"{'—' if training.validation_loss is None else f'{training.validation_loss:.4f}'}; checkpoint "
                  f"{out / training.checkpoint}", highlight=False, soft_wrap=True)
    if metrics.preference is not None:
        counts = metrics.preference
        console.print(f"DPO: {counts.with_rejected} of {counts.pairs} pairs have a rejected answer ({counts.right} "
                      f"answered right, {counts.invalid} invalid: left out)", highlight=False)
    console.print(f"evaluations: {metrics.calls} calls, {metrics.cached_calls} cached, {metrics.tokens:,} tokens, "
                  f"${metrics.cost_usd:.4f}; {metrics.seconds:.1f} s", highlight=False)
    console.print(f"report: {write_finetune_report(out)}", highlight=False, soft_wrap=True)
