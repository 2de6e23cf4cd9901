"""ECLEKTIC's HTML reports: one run (`eclektic_report`) and a comparison of runs (`leaderboard_report`).

A report leads with the scores as Table 2 prints them ("41.6±1.5") and the heatmaps of Figures 3 and 5, the
numbers, config and definitions collapsed below; a run with a base model says first that its numbers check the
machinery. Every page stands alone, and its figures are also saved as figures/NAME.png.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from crossknow.eclektic.metrics import EclekticMetrics, format_estimate
from crossknow.errors import CrossknowError
from crossknow.report import html
from crossknow.report.eclektic_figures import (
    CELL_COLUMNS,
    language_order,
    macro_means,
    matrix_grid,
    matrix_heatmap,
    off_diagonal,
    params_label,
    percent,
    scaling_figure,
)
from crossknow.report.figures import save_figure
from crossknow.store.atomic import atomic_write_text

REPORT_FILE = "report.html"
"""The report of one run, in its run directory."""
LEADERBOARD_FILE = "leaderboard.html"
"""The comparison of several runs."""
METRICS = ("transfer", "overall")
"""The two metrics with a heatmap each: figures/transfer.png and figures/overall.png, <figure id="fig-NAME">."""
METRIC_TITLES = {"overall": "Overall success", "transfer": "Transfer score"}
SUMMARY_HEADERS = ["model", "overall success (%)", "transfer score (%)", "n (examples)", "|K| (source correct)",
                   "invalid (left out)", "no source row (left out)"]
"""The columns of the summary table of a run and of the leaderboard: one row per model."""


@dataclass(frozen=True)
class ModelResult:
    """One model's scores for the leaderboard."""

    name: str
    """The model's label in the table and the size plot."""
    metrics: EclekticMetrics
    """Its scores (a run's metrics.json)."""
    params: float | None = None
    """Its parameter count, for the size plot (None: left out of the plot)."""
    run: str | None = None
    """The run directory the scores come from, where there is one."""


READINGS = {
    "include": "source rows included in both averages",
    "exclude": "source rows excluded from both averages (the reading that reproduces Table 2)",
    "helm": "HELM's reading (source rows in the transfer score only)",
}
"""How the lead sentence names each reading of the source rows (see `crossknow.eclektic.metrics`)."""


def summary_row(name: str, metrics: EclekticMetrics) -> list[object]:
    """One model's row of the summary table (SUMMARY_HEADERS)."""
    return [name, format_estimate(metrics.overall), format_estimate(metrics.transfer), metrics.overall.n,
            metrics.transfer.n, metrics.n_invalid, metrics.n_missing_source]


def matrix_cells(metrics: EclekticMetrics, metric: str) -> pd.DataFrame:
    """The source x target cells of `metric` ('overall' or 'transfer') as the table `matrix_heatmap` reads."""
    rows = [(cell.source_lang, cell.target_lang, cell.numerator, cell.denominator) for cell in metrics.matrices[metric]]
    return pd.DataFrame(rows, columns=list(CELL_COLUMNS))


def definitions(metrics: EclekticMetrics) -> str:
    """The metrics' definitions (paper section 3.2) and the reading and interval method of `metrics`."""
    interval = ("normal approximation, value ± z·sqrt(p(1-p)/n)" if metrics.ci == "normal" else
                f"bootstrap over questions, {metrics.n_boot} resamples, seed {metrics.seed}, percentile interval")
    return "\n".join([
        "S = 1(M(q_lt) = a_lt and M(q_ls) = a_ls): the question is answered correctly in the target language "
        "and in its source language.",
        "overall success = mean of S over the examples D (n).",
        "transfer score = mean of S over K, the examples whose source-language question was answered "
        "correctly (|K|).",
        f"source rows: {READINGS[metrics.source_rows]}.",
        f"intervals: {metrics.confidence:.0%}, {interval}.",
        "invalid: an example whose own or whose source row's correctness is undecided (an invalid answer or "
        "judgement) is left out of both averages, never counted wrong; 'no source row': a target row whose "
        "question has no source-language row for that sample.",
        "heatmaps: rows target language, columns source language; every example is in its cell whatever the "
        "reading, so the overall diagonal is the source-language accuracy and the transfer diagonal is 100%.",
    ])


def diagonal_in_means(metric: str) -> bool:
    """Whether a metric's mean strips average its diagonal: not the transfer score's, 100% by definition."""
    return metric != "transfer"


def _matrix_table(cells: pd.DataFrame, metric: str) -> str:
    """The heatmap's numbers as a table: one row per target language, one column per source language, each
    cell 'value (numerator/denominator)', the macro means as the last row and column (the transfer means
    without the diagonal, which is 100% by definition)."""
    sources, targets = language_order(cells["source_lang"]), language_order(cells["target_lang"])
    numerators, denominators, values = matrix_grid(cells, targets, sources)
    averaged = values if diagonal_in_means(metric) else off_diagonal(values, targets, sources)
    column_means, row_means = macro_means(averaged, axis=0), macro_means(averaged, axis=1)

    def shown(value: float, text: str = "") -> str | None:
        return None if np.isnan(value) else percent(value) + (f" ({text})" if text else "")

    rows = [[target, *(shown(values[i, j], f"{numerators[i, j]}/{denominators[i, j]}")
                       for j in range(len(sources))), shown(row_means[i])] for i, target in enumerate(targets)]
    rows.append(["mean", *(shown(value) for value in column_means), None])
    return html.table(f"table-{metric}", f"{METRIC_TITLES[metric]}: rows target language, columns source language",
                      ["target \\ source", *sources, "mean"], rows)


BASE_MODEL_NOTE = ("Note: a small base model answered or judged this run (asked by crossknow's few-shot completion "
                   "prompts): its numbers check the machinery, they do not measure a model's weakness. ")
"""What the lead of a base model's run says first."""


def asks_a_base_model(model: str, meta: Mapping[str, object] | None) -> bool:
    """Whether a run used a base model: its model spec is the embedded `default`, or models.json (`meta["models"]`)
    records a model asked in completion form."""
    models = (meta or {}).get("models")
    entries = models.values() if isinstance(models, Mapping) else []
    formats = [entry.get("prompt_format") for entry in entries if isinstance(entry, Mapping)]
    return model.split("#")[0] == "default" or "completion" in formats


def _lead(metrics: EclekticMetrics, warnings: Sequence[str] = ()) -> str:
    """The finding in one sentence, after the warnings (e.g. a judge mostly invalid), each a sentence."""
    caution = "".join(f"Warning: {warning}. " for warning in warnings)
    overall = f"{caution}Overall success {format_estimate(metrics.overall)}% over {metrics.overall.n} examples; "
    if metrics.transfer.value is None:
        transfer = "transfer score undefined: no question was answered correctly in its source language (|K| = 0)"
    else:
        transfer = (f"transfer score {format_estimate(metrics.transfer)}% over the {metrics.transfer.n} examples whose "
                    "question was answered correctly in its source language")
    return (f"{overall}{transfer} ({READINGS[metrics.source_rows]}; {metrics.confidence:.0%} intervals, "
            f"{metrics.ci}).")


def eclektic_report(metrics: EclekticMetrics, out_dir: Path, *, model: str, meta: Mapping[str, object] | None = None,
                    extra: Sequence[str] = (), warnings: Sequence[str] = ()) -> Path:
    """Write report.html and figures/{transfer,overall}.png of one run into `out_dir`; returns the report's path.

    `model` labels the scores; `meta` (config, inputs' hashes, ...) goes into the collapsed run section;
    `extra` are HTML sections placed after the heatmaps (e.g. the judges' agreement); `warnings` open the
    lead sentence (e.g. `crossknow.eclektic.run_outputs.unreliable_judges`)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    body = [html.table("table-summary", "Scores (value ± half-width of the interval, in percent)", SUMMARY_HEADERS,
                       [summary_row(model, metrics)])]
    numbers = []
    for metric in METRICS:
        cells = matrix_cells(metrics, metric)
        title = f"{METRIC_TITLES[metric]} by source and target language"
        body += [f"<h2>{title}</h2>", save_figure(
            out_dir, metric, matrix_heatmap(cells, f"{METRIC_TITLES[metric]}: {model}",
                                            diagonal_in_means=diagonal_in_means(metric)),
            f"{title}: each cell the score over numerator/denominator; blue is better, red is worse; "
            "the strips are unweighted means of the non-empty cells"
            + ("" if diagonal_in_means(metric) else " off the diagonal"))]
        numbers.append(_matrix_table(cells, metric))
    body += list(extra)
    run_parts = [html.meta_table(meta)] if meta else []
    run_parts += ["<h3>Definitions</h3>", html.preformatted(definitions(metrics))]
    collapsed = [("Numbers behind the heatmaps", numbers), ("Run: config, inputs and definitions", run_parts)]
    lead = (BASE_MODEL_NOTE if asks_a_base_model(model, meta) else "") + _lead(metrics, warnings)
    page = html.report_page(f"ECLEKTIC: {model}", lead, body, collapsed)
    return atomic_write_text(out_dir / REPORT_FILE, page)


def leaderboard_report(results: Sequence[ModelResult], out_dir: Path) -> Path:
    """Write leaderboard.html (and figures/scaling.png) comparing `results` into `out_dir`: the models ranked by
    overall success as Table 2, then the size plot of Figure 4 when at least two carry a parameter count;
    returns the page's path."""
    if not results:
        raise CrossknowError("a leaderboard needs at least one scored run")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    ranked = sorted(results, key=lambda r: -(r.metrics.overall.value if r.metrics.overall.value is not None else -1))
    body = [html.table("table-leaderboard", "Models ranked by overall success (value ± half-width, in percent)",
                       SUMMARY_HEADERS, [summary_row(r.name, r.metrics) for r in ranked])]
    if sum(r.params is not None for r in results) >= 2:
        points = pd.DataFrame([{
            "model": r.name, "params": r.params, "overall": r.metrics.overall.value,
            "overall_half_width": r.metrics.overall.half_width, "transfer": r.metrics.transfer.value,
            "transfer_half_width": r.metrics.transfer.half_width} for r in results])
        body += ["<h2>Scores by model size</h2>", save_figure(
            out_dir, "scaling", scaling_figure(points),
            "Overall success and transfer score against parameter count (log scale), with their intervals")]
    readings = {definitions(r.metrics) for r in results}
    notes = [html.preformatted(text) for text in sorted(readings)]
    if len(readings) > 1:
        notes.insert(0, html.paragraph("The runs differ in how their scores were computed: compare with care.",
                                       "note"))
    runs = html.table("table-runs", "Runs", ["model", "parameters", "run directory"],
                      [[r.name, params_label(r.params) if r.params else None, r.run] for r in results],
                      text_columns=3)
    best = ranked[0]
    lead = (f"{len(results)} models; the best overall success is {best.name}'s "
            f"({format_estimate(best.metrics.overall)}).")
    page = html.report_page("ECLEKTIC leaderboard", lead, body, [("Runs and definitions", [*notes, runs])])
    return atomic_write_text(out_dir / LEADERBOARD_FILE, page)
