"""`crossknow annotate`: human evaluation of a generated AdaXEval set (export a sheet, score it back)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from crossknow.cli.consoles import console

annotate_app = typer.Typer(
    help="Human evaluation of a generated set: export a CSV sheet with the paper's rubrics, then score it.",
    no_args_is_help=True,
)
commands = typer.Typer()
"""This module's group, which `crossknow.cli.app` imports when it is asked for (`crossknow.cli.lazy`)."""
commands.add_typer(annotate_app, name="annotate")


@annotate_app.command("export")
def export(
    run: Path = typer.Option(..., help="Run directory of crossknow generate."),
    sheet: Path = typer.Option(..., help="CSV sheet to write (the rubrics go beside it, in .rubric.md)."),
    n: int = typer.Option(
        100, min=1, help="Random items per language (default: the paper's 100 per language, section 3.4)."
    ),
    seed: int = typer.Option(0, help="Seed of the random draw."),
) -> None:
    """Write N random generated items per language as a sheet to fill in (Appendix A.6 rubrics)."""
    from crossknow.adaxeval.annotate import export_sheet, rubric_path

    written = export_sheet(run, n, seed, sheet)
    counts = ", ".join(f"{lang} {count}" for lang, count in written.items())
    console.print(f"wrote {sheet} ({counts} items) and the rubrics in {rubric_path(sheet)}")


def score_table(scores) -> Table:
    """The mean scores as a rich table, like the paper's Table 2."""
    from crossknow.adaxeval.annotate import COMBINED, RUBRICS

    table = Table(title="AdaXEval human evaluation")
    table.add_column("Evaluation metric")
    for lang in scores.langs:
        table.add_column(f"{lang} (n={scores.items[lang]})", justify="right")
    maximum = {rubric.column: rubric.maximum for rubric in RUBRICS}
    rows = [(rubric.column, rubric.label) for rubric in RUBRICS]
    rows += [(column, label) for column, (label, _) in COMBINED.items()]
    for column, label in rows:
        top = maximum.get(column) or maximum[COMBINED[column][1][0]]
        cells = []
        for lang in scores.langs:
            mean = scores.means[column][lang]
            cells.append("-" if mean is None else f"{mean:.2f}/{top}")
        table.add_row(label, *cells)
    return table


@annotate_app.command("score")
def score(sheet: Path = typer.Option(..., help="The filled CSV sheet.")) -> None:
    """Validate a filled sheet and print the mean score per rubric and language."""
    from crossknow.adaxeval.annotate import score_sheet

    scores = score_sheet(sheet)
    if not scores.langs:
        console.print(f"{sheet}: no rows")
        return
    console.print(score_table(scores))
