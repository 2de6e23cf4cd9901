"""The report of `crossknow pitfalls categorize` (report.html of the run): the paper's Table 4 with the cells above
the overall average highlighted, a stacked bar chart of the domains per language, the same table from the
input's own labels when it has them (the release's `category`), the invalid answers, and the run."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

import yaml
from matplotlib.figure import Figure

from crossknow.data.languages import language_name
from crossknow.pitfalls.categories import (
    ABBREVIATIONS,
    CATEGORIES,
    CLASSIFY_TEMPLATE,
    TABLE_COLUMNS,
    CategoryLog,
    CategoryPair,
    CategoryTable,
    classify_completion_prompt,
)
from crossknow.pitfalls.categorize.run import CategorizeMetrics
from crossknow.report import html
from crossknow.report.figures import save_figure
from crossknow.report.pitfalls_figures import REPORT_FILE
from crossknow.store.atomic import atomic_write_text

HIGHLIGHT = "background:#ffd8a8"
"""Style of a cell above its domain's overall average (the paper highlights them in orange)."""
COLOURS = dict(zip(TABLE_COLUMNS, ("#4c72b0", "#8c8c8c", "#55a868", "#dd8452", "#c44e52", "#8172b3"), strict=True))
"""One colour per domain in the bar chart."""
COMPLETION_TEMPLATE = classify_completion_prompt(CategoryPair("", "", "{question}", ("{choices}",))).text
"""The completion form of the classifier prompt, its inputs shown as placeholders."""


def language_label(lang: str) -> str:
    """A language's name (Japanese for ja); an error for a code crossknow's table lacks."""
    return language_name(lang)


def percent_text(value: float | None) -> str:
    """A percentage as Table 4 prints it (61.95%); an em dash for None."""
    return "—" if value is None else f"{value:.2f}%"


def table4_html(table_id: str, caption: str, table: CategoryTable) -> str:
    """Table 4 as HTML: per language the pairs, the invalid ones and the percentage in each domain (highlighted
    where above the overall average), then the overall average."""
    headers = ["language", "pairs", "invalid", *(ABBREVIATIONS[c] for c in TABLE_COLUMNS)]
    head = '<th class="text">language</th>' + "".join(f"<th>{escape(h)}</th>" for h in headers[1:])
    rows = []
    for row in table.languages:
        cells = "".join((f'<td style="{HIGHLIGHT}">' if row.above_average[c] else "<td>")
                        + f"{escape(percent_text(row.percent[c]))}</td>" for c in TABLE_COLUMNS)
        rows.append(f'<tr><td class="text">{escape(language_label(row.lang))}</td><td>{row.n_pairs}</td>'
                    f"<td>{row.n_invalid}</td>{cells}</tr>")
    overall = "".join(f"<td>{escape(percent_text(table.overall_percent[c]))}</td>" for c in TABLE_COLUMNS)
    rows.append(f'<tr><th class="text">Overall Average</th><td>{table.n_classified + table.n_invalid}</td>'
                f"<td>{table.n_invalid}</td>{overall}</tr>")
    return (f'<table id="{escape(table_id)}">\n<caption>{escape(caption)}</caption>\n<thead><tr>{head}</tr></thead>\n'
            "<tbody>\n" + "\n".join(rows) + "\n</tbody>\n</table>")


def counts_html(table_id: str, caption: str, table: CategoryTable) -> str:
    """The counts behind a Table 4: classified pairs per language and domain, and all languages pooled."""
    rows = [[language_label(row.lang), row.n_classified, *(row.counts[c] for c in TABLE_COLUMNS)]
            for row in table.languages]
    rows.append(["all languages", table.n_classified, *(table.counts[c] for c in TABLE_COLUMNS)])
    return html.table(table_id, caption, ["language", "classified", *(ABBREVIATIONS[c] for c in TABLE_COLUMNS)], rows)


def stacked_bars(table: CategoryTable) -> Figure:
    """One horizontal bar per language (and the overall average), split into the domains' percentages."""
    rows = [(language_label(row.lang), row.percent) for row in table.languages if row.n_classified]
    rows.append(("Overall Average", table.overall_percent))
    figure = Figure(figsize=(9, 0.45 * len(rows) + 1.6))
    axes = figure.add_subplot()
    labels = [label for label, _ in rows][::-1]
    left = [0.0] * len(rows)
    for category in TABLE_COLUMNS:
        widths = [percent[category] or 0.0 for _, percent in rows][::-1]
        axes.barh(labels, widths, left=left, color=COLOURS[category], label=ABBREVIATIONS[category])
        left = [a + b for a, b in zip(left, widths, strict=True)]
    axes.set_xlim(0, 100)
    axes.set_xlabel("% of the language's classified pairs")
    axes.legend(ncol=6, fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    return figure


def write_categories_report(run: Path) -> Path:
    """report.html (and figures/) of a `crossknow pitfalls categorize` run directory; returns its path."""
    run = Path(run)
    metrics = CategorizeMetrics.model_validate_json((run / "metrics.json").read_text(encoding="utf-8"))
    config = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))
    table = metrics.table
    lead = (f"{table.n_classified} of {metrics.n_pairs} pairs in {len(table.languages)} language(s) classified into "
            f"the six subject domains of the paper's Table 4 by {metrics.classifier}; {table.n_invalid} answer(s) "
            f"stayed invalid and are in no category; {metrics.pending} pair(s) left for a later run.")
    if metrics.agreement is not None:
        lead += (f" The classifier agrees with the input's own labels on {metrics.agreement:.1%} of the "
                 f"{metrics.n_compared} pairs that have both.")
    findings = [table4_html("table-categories", "Percentage of each language's classified pairs per domain; "
                            "highlighted: above the domain's overall average (the paper's Table 4)", table)]
    if table.n_classified:
        findings.append(save_figure(run, "pitfalls_categories", stacked_bars(table),
                                    "Subject domains of the pairs per language"))
    if metrics.reference is not None:
        findings.append(table4_html("table-reference", "The same table from the input's own labels (the release's "
                                    "`category` field) of the pairs that have one", metrics.reference))
    log = CategoryLog(run)
    invalid = [[row.pair_id, language_label(row.lang), row.error, row.attempts] for row in log.rows.values()
               if row.category is None]
    definitions = html.paragraph(
        "Percentages are over a language's classified pairs; an invalid answer (unparseable, or a category outside "
        f"the six: {', '.join(CATEGORIES)}) is retried, then recorded and counted, never put into a category. "
        "The overall average pools all classified pairs of all languages, as the paper's printed row does. "
        "The classifier sees the English side of each pair, with crossknow's prompt (the paper prints none): a chat "
        "model this one, answering as JSON:")
    completion = html.paragraph(
        "A base model (completion form) this few-shot one instead, continued by one line that code reads as one of "
        "the six names:")
    cost = (f"calls {metrics.calls}, cached {metrics.cached_calls}, tokens {metrics.tokens}, "
            f"${metrics.cost_usd:.4f}, {metrics.seconds:.1f} s this invocation")
    counts = [counts_html("table-counts", "Classified pairs per domain", table)]
    if metrics.reference is not None:
        counts.append(counts_html("table-reference-counts", "Pairs per domain by the input's own labels",
                                  metrics.reference))
    page = html.report_page(
        "Cross-Lingual Pitfalls: subject domains", lead, findings,
        [("Counts", counts),
         ("Invalid answers", [html.table("table-invalid", f"{len(invalid)} pair(s) with no category",
                                         ["pair", "language", "reason", "attempts"], invalid, text_columns=3)]),
         ("Definitions", [definitions, html.preformatted(CLASSIFY_TEMPLATE), completion,
                          html.preformatted(COMPLETION_TEMPLATE)]),
         ("Run", [html.paragraph(cost), html.meta_table(config)]),
         ("metrics.json", [html.preformatted(json.dumps(metrics.model_dump(), indent=2, ensure_ascii=False))])],
    )
    path = run / REPORT_FILE
    atomic_write_text(path, page)
    return path
