"""The report of `crossknow pitfalls finetune` (report.html of the run): the paper's Table 2 for one model and
method, a bar chart of Diff. per language, and, collapsed, the training, the DPO counts, the evaluations'
pair tables and the settings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import yaml
from matplotlib.figure import Figure

from crossknow.pitfalls.eval_records import PitfallsEvalMetrics
from crossknow.pitfalls.finetune.records import LanguageRow, PitfallsFinetuneMetrics
from crossknow.report import html
from crossknow.report.figures import save_figure
from crossknow.report.pitfalls_figures import REPORT_FILE, pair_table
from crossknow.store.atomic import atomic_write_text

TABLE_HEADERS = ["language", "role", "pairs", "compared", "invalid", "Orig.", "Enh.", "Diff.", "EN Orig.", "EN Enh."]


def table_rows(metrics: PitfallsFinetuneMetrics) -> list[list[object]]:
    """Table 2's rows: language, role, pair counts, Orig., Enh., Diff. and the English accuracies."""
    return [[row.lang, row.role, row.n_pairs, row.n_compared, row.n_invalid, row.original, row.enhanced, row.diff,
             row.english_original, row.english_enhanced] for row in metrics.rows]


def table_text(metrics: PitfallsFinetuneMetrics) -> str:
    """Table 2 as Markdown (for the terminal and notes)."""
    lines = ["| " + " | ".join(TABLE_HEADERS) + " |", "|" + "---|" * len(TABLE_HEADERS)]
    for row in table_rows(metrics):
        lines.append("| " + " | ".join(html.cell(value, 3) for value in row) + " |")
    return "\n".join(lines)


def diff_figure(rows: list[LanguageRow], title: str) -> Figure:
    """Bars of Diff. (Enh. - Orig.) per language, the training language's rows hatched."""
    shown = [row for row in rows if row.diff is not None]
    figure = Figure(figsize=(max(4.5, 0.9 * len(shown) + 2), 3.4))
    axes = figure.add_subplot()
    positions = np.arange(len(shown))
    diffs = [row.diff for row in shown]
    bars = axes.bar(positions, diffs, 0.6, color=["#55a868" if d >= 0 else "#c44e52" for d in diffs])
    for bar, row in zip(bars, shown, strict=True):
        if row.role != "evaluation":
            bar.set_hatch("//")
        axes.annotate(f"{row.diff:+.3f}", (bar.get_x() + bar.get_width() / 2, row.diff), ha="center",
                      va="bottom" if row.diff >= 0 else "top", fontsize=8, xytext=(0, 3 if row.diff >= 0 else -3),
                      textcoords="offset points")
    axes.axhline(0, color="black", linewidth=0.8)
    axes.set_xticks(positions, [f"{row.lang}\n({row.role})" for row in shown], fontsize=8)
    axes.set_ylabel("Diff. = Enh. - Orig.")
    axes.set_title(title)
    return figure


def _lead(metrics: PitfallsFinetuneMetrics) -> str:
    training = metrics.training
    others = [row for row in metrics.rows if row.role == "evaluation" and row.diff is not None]
    lead = (f"{metrics.method.upper()} of {metrics.model} on {training.train_examples} {metrics.train_lang} examples "
            f"({training.steps} steps). ")
    if others:
        best = max(others, key=lambda row: row.diff)
        lead += (f"Largest change in another language: {best.lang}, {best.original:.1%} -> {best.enhanced:.1%} "
                 f"({best.diff:+.3f}) on {best.n_compared} pairs.")
    return lead


def write_finetune_report(run: Path) -> Path:
    """report.html (and figures/) of a `crossknow pitfalls finetune` run directory; returns its path."""
    run = Path(run)
    metrics = PitfallsFinetuneMetrics.model_validate_json((run / "metrics.json").read_text(encoding="utf-8"))
    config = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))
    table = html.table("table-finetune", f"Target-language accuracy before (Orig.) and after (Enh.) "
                       f"{metrics.method.upper()} on {metrics.train_lang} (the paper's Table 2)", TABLE_HEADERS,
                       table_rows(metrics), text_columns=2)
    figure = save_figure(run, "pitfalls_finetune_diff", diff_figure(metrics.rows, f"{metrics.method.upper()} on "
                         f"{metrics.train_lang}: change in target-language accuracy"),
                         "Diff. per evaluated language (hatched: the training language)")
    definitions = html.paragraph(
        "Orig. and Enh. are target-language accuracies on the same pairs: those whose target-language answer is "
        "valid before and after fine-tuning (an invalid answer is counted, never wrong). The training row covers "
        "the whole training file, examples trained on included; the held-out row only its validation pairs.")
    training = html.meta_table(metrics.training.model_dump(), "table-training", "Training")
    collapsed: list[tuple[str, list[str]]] = [("Definitions", [definitions]), ("Training", [training])]
    if metrics.preference is not None:
        collapsed.append(("DPO pairs", [html.meta_table(metrics.preference.model_dump(), "table-preference",
                                                        "Pairs with and without a rejected answer")]))
    evaluations = []
    for stage in ("base", "tuned"):
        for directory in sorted((run / "eval" / stage).iterdir()):
            evaluation = PitfallsEvalMetrics.model_validate_json((directory / "metrics.json").read_text(
                encoding="utf-8"))
            evaluations += [html.paragraph(f"{stage}: {directory.name}"), pair_table(evaluation)]
    cost = (f"calls {metrics.calls}, cached {metrics.cached_calls}, tokens {metrics.tokens}, "
            f"${metrics.cost_usd:.4f}; {metrics.seconds:.1f} s this invocation")
    collapsed += [("Evaluations", evaluations), ("Run", [html.paragraph(cost), html.meta_table(config)]),
                  ("metrics.json", [html.preformatted(json.dumps(metrics.model_dump(), indent=2,
                                                                 ensure_ascii=False))])]
    page = html.report_page("Cross-Lingual Pitfalls: targeted fine-tuning", _lead(metrics), [table, figure], collapsed)
    path = run / REPORT_FILE
    atomic_write_text(path, page)
    return path
