"""`crossknow perturb`: perturbed variants of sampled training sequences (full paper, section 5.1)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from crossknow.cli.consoles import console, errors
from crossknow.cli.options import config_command
from crossknow.cli.progress import bar
from crossknow.perturb.records import PerturbConfig, PerturbSummary

commands = typer.Typer()
"""This module's command, which `crossknow.cli.app` imports when it is asked for (`crossknow.cli.lazy`)."""


def summary_table(summary: PerturbSummary) -> Table:
    """Variants, failures and mean token edit distance per setting."""
    table = Table(title=f"perturbations of {summary.sequences} sequences ({summary.tokenizer})")
    for column in ("setting", "variants", "failed", "mean edit distance", "mean edit / length"):
        table.add_column(column, justify="left" if column == "setting" else "right")
    for row in summary.rows:
        table.add_row(row.label, str(row.variants), str(row.failed) if row.failed else "",
                      "" if row.mean_edit_distance is None else f"{row.mean_edit_distance:.2f}",
                      "" if row.mean_edit_fraction is None else f"{row.mean_edit_fraction:.3f}")
    return table


@config_command(commands, PerturbConfig, comma_lists=("methods", "x", "y", "sentence_x"))
def perturb(
    config: PerturbConfig,
    out: Path = typer.Option(..., help="Run directory; run the same command again on it to resume the rewrites."),
) -> None:
    """Sample training sequences from --corpus and write variants.jsonl: each original and its token-level
    (mask, random, delete, reorder, monosyn, mltsyn) and sentence-level (partial, syntax, lexicon, semantic,
    translation) perturbations, each with its token edit distance; then score them with trace-sequences."""
    from crossknow.perturb.pipeline import run_perturb

    with bar(errors, "perturbing") as update:
        summary = run_perturb(config, out, lambda stage, done, total: update(done, total, stage))
    console.print(summary_table(summary))
    if summary.sequences < summary.sequences_asked:
        longer = f" of {summary.min_sentences} sentences or more" if summary.min_sentences else ""
        console.print(f"the corpus holds {summary.sequences} sequences in {config.lang}{longer}, fewer than --n "
                      f"{summary.sequences_asked}: all were taken")
    if summary.rewrite_calls or summary.rewrite_cached_calls:
        console.print(f"rewrites: {summary.rewrite_calls} generator calls, {summary.rewrite_cached_calls} from the "
                      f"cache, ${summary.rewrite_cost_usd:.4f}")
    if summary.failures:
        console.print(f"{summary.failures} perturbations could not be made (see {out / 'failures.jsonl'})")
    console.print(f"{summary.variants} variants: {out / 'variants.jsonl'} ({summary.seconds:.1f} s)")
