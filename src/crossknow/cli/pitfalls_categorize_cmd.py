"""`crossknow pitfalls categorize`: the subject domain of each pair by an LLM classifier (the paper's Table 4)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich import box
from rich.table import Table

from crossknow.cli.consoles import console, errors
from crossknow.cli.options import config_command
from crossknow.cli.progress import stage_bars
from crossknow.pitfalls.categories import ABBREVIATIONS, TABLE_COLUMNS, CategoryTable
from crossknow.pitfalls.categorize.run import CategorizeConfig

commands = typer.Typer()
"""This module's sub-command, which `crossknow.cli.pitfalls_cmd` imports when it is asked for."""


def percent_text(value: float | None) -> str:
    """A percentage without its sign (the title says %), as Table 4 rounds it; an em dash for None."""
    return "—" if value is None else f"{value:.2f}"


def table4(table: CategoryTable, title: str) -> Table:
    """The paper's Table 4 as a rich table: per language its classified pairs and the percentage of them in each
    domain, bold orange where above the domain's overall average, then the overall average."""
    from crossknow.report.pitfalls_categories_report import language_label

    caption = "n: classified pairs (the invalid ones are in no percentage); bold orange: above the domain's average"
    rich = Table(title=f"{title} (% of each language's classified pairs)", caption=caption, box=box.SIMPLE_HEAD,
                 show_edge=False, pad_edge=False)
    rich.add_column("language", no_wrap=True)
    for header in ("n", *(ABBREVIATIONS[c] for c in TABLE_COLUMNS)):
        rich.add_column(header, justify="right")
    for row in table.languages:
        cells = [f"[bold orange3]{percent_text(row.percent[c])}[/]" if row.above_average[c]
                 else percent_text(row.percent[c]) for c in TABLE_COLUMNS]
        rich.add_row(language_label(row.lang), str(row.n_classified), *cells)
    rich.add_row("Overall Average", str(table.n_classified),
                 *(percent_text(table.overall_percent[c]) for c in TABLE_COLUMNS), style="bold")
    return rich


@config_command(commands, CategorizeConfig, flags={"timeout_s": "--timeout"}, name="categorize")
def categorize(
    config: CategorizeConfig,
    out: Path = typer.Option(..., help="Run directory; run the same command again on it to resume."),
) -> None:
    """Classify the English side of every pair into the six subject domains of the paper's Table 4; write
    categories.jsonl, metrics.json and report.html."""
    from crossknow.cli.progress import spent
    from crossknow.generation.cached_calls import CostMeter
    from crossknow.pitfalls.categorize.run import run_categorize
    from crossknow.report.pitfalls_categories_report import write_categories_report

    with stage_bars(errors) as update:
        metrics = run_categorize(config, out, on_progress=update)
    console.print(table4(metrics.table, f"Subject domains by {metrics.classifier}"))
    if metrics.reference is not None:
        console.print(table4(metrics.reference, "The input's own labels (the release's `category`)"))
        console.print(f"agreement with the input's labels: {metrics.agreement:.1%} of {metrics.n_compared} pairs"
                      if metrics.agreement is not None else "no pair has both a category and a label", highlight=False)
    meter = CostMeter(calls=metrics.calls, cached_calls=metrics.cached_calls, prompt_tokens=metrics.tokens,
                      cost_usd=metrics.cost_usd)
    pending = f"; {metrics.pending} pairs failed in transport: run again to retry them" if metrics.pending else ""
    skipped = f", {metrics.n_skipped} records skipped (see invalid.jsonl)" if metrics.n_skipped else ""
    console.print(f"{metrics.n_pairs} pairs{skipped}; {metrics.table.n_invalid} invalid answers; this run: "
                  f"{spent(meter)}; {metrics.seconds:.1f} s{pending}", highlight=False)
    console.print(f"categories: {out / 'categories.jsonl'}\nreport: {write_categories_report(out)}", highlight=False,
                  soft_wrap=True)
