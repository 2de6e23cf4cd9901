"""`crossknow train`: continual pretraining with the paper's data recipes."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from crossknow.cli.consoles import console, errors
from crossknow.cli.options import config_command
from crossknow.cli.progress import bar
from crossknow.training.records import TrainConfig, TrainSummary

commands = typer.Typer()
"""This module's command, which `crossknow.cli.app` imports when it is asked for (`crossknow.cli.lazy`)."""


def stage_table(summary: TrainSummary) -> Table:
    """What went into training, per corpus: texts and tokens built, the budget, texts and tokens trained on."""
    table = Table(title=f"training data ({summary.sequences:,} sequences)")
    for column in ("corpus", "texts built", "tokens built", "budget", "texts trained", "tokens trained"):
        table.add_column(column, justify="left" if column == "corpus" else "right")
    names = {"knowledge": "C_K (knowledge)", "transfer": "C_T (transfer)"}
    for part, row in summary.parts.items():
        budget = "all" if row.budget is None else f"{row.budget:,}"
        texts = f"{row.texts:,}" + (f" ({row.cut} cut)" if row.cut else "")
        table.add_row(names.get(part, part), f"{row.texts_built:,}", f"{row.tokens_built:,}", budget, texts,
                      f"{row.tokens:,}")
    captions = []
    if summary.transfer_excluded is not None:
        captions.append(f"C_T: {summary.transfer_excluded} evaluation documents and translations left out "
                        "(transfer_excluded.json)")
    if summary.qa is not None:
        qa = summary.qa
        rejected = ", ".join(f"{count} {rule}" for rule, count in qa.rejected.items()) or "none"
        captions.append(
            f"question-answer pairs ({qa.generator}, {qa.prompt_form}): {qa.documents} documents, {qa.complete} "
            f"complete, {qa.partial} with fewer pairs, {qa.invalid} invalid; pairs rejected: {rejected} "
            f"(qa_pairs.jsonl); {qa.calls_this_run} calls sent, {qa.cached_calls_this_run} from the cache"
        )
    table.caption = "\n".join(captions) or None
    return table


@config_command(commands, TrainConfig, comma_lists=("langs", "transfer_langs"))
def train(
    config: TrainConfig,
    out: Path = typer.Option(..., help="Run directory; run again on it to resume from the newest checkpoint."),
) -> None:
    """Continually pretrain a causal LM; write checkpoints, the per-step loss log and the training texts."""
    from crossknow.training.trainer import run_train

    with bar(errors, "training") as update:
        summary = run_train(config, out, update)
    console.print(stage_table(summary))
    console.print(
        f"{summary.steps} steps, {summary.tokens_seen} tokens, {len(summary.checkpoints)} checkpoints "
        f"({summary.trainable_parameters:,} of {summary.total_parameters:,} parameters trained) "
        f"in {summary.seconds:.0f} s; run directory: {out}", soft_wrap=True,
    )
