"""The report of a `crossknow trace-sequences` run: what the sequences' losses did, first.

report.html opens with the finding (the run's readings of the paper's findings of sections 5.1.1 and 5.1.2, and the
summary table per setting), then Figs. 5-9, the appendix figures and, with per-token losses, Figs. 10-11; the
curves, config and definitions come last, collapsed. perturbation_summary.json holds the summary table.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

import pandas as pd

from crossknow.dynamics.onset import ONSET_DEFINITION, OnsetParams
from crossknow.dynamics.sequence_curves import GAP_DEFINITION, SETTING, curve_summary, sequence_curves
from crossknow.dynamics.sequence_inputs import read_sequences
from crossknow.dynamics.sequence_loss import SEQUENCE_FILE, TOKEN_FILE
from crossknow.errors import CrossknowError
from crossknow.report import html
from crossknow.report.figures import save_figure
from crossknow.report.perturbation_figures import APPENDIX_FIGURES, FIGURES, perturbation_figure, reorder_window
from crossknow.report.run_report import run_meta
from crossknow.store.atomic import atomic_write_json, atomic_write_text
from crossknow.store.run_dir import CONFIG_FILE

REPORT_FILE = "report.html"
SUMMARY_FILE = "perturbation_summary.json"
SUMMARY_HEADERS = ["setting", "sequences", "first step", "loss at first", "last step", "loss at last", "min loss",
                   "min step", "onset step", "gap at first", "gap at last"]
SUMMARY_COLUMNS = ["label", "n_sequences", "first_step", "first_loss", "last_step", "last_loss", "min_loss",
                   "min_step", "onset_step", "gap_first", "gap_last"]
DEFINITIONS = (
    "Loss of a sequence: its mean token cross-entropy (nats per token) with the model reading BOS and then the "
    "sequence, as crossknow's Scorer computes it; a token-level variant is scored on its exact token ids. A curve is "
    "the mean over the sequences of one setting (method, X, Y, a) at each checkpoint; originals are drawn black and "
    "dashed. Settings are named method-X (percent of tokens or sentences perturbed), reorder-X@Y (Y: the window of "
    "the swaps) and partial-a (the a-th of four segments).",
    GAP_DEFINITION,
    ONSET_DEFINITION,
    "Fig. 6 shows reorder at window 3, as the authors' code runs reorder-X@3 (the paper's text does not name the "
    "window), or at the smallest window present when 3 is not (crossknow's choice). Variants that some checkpoint "
    "could not score are left out at every checkpoint and listed in invalid.jsonl.",
)


def _read(run: Path) -> pd.DataFrame:
    path = run / SEQUENCE_FILE
    if not path.is_file():
        raise CrossknowError(f"{run} has no {SEQUENCE_FILE}: is it the run directory of `crossknow trace-sequences`?")
    table = pd.read_parquet(path)
    if table.empty:
        raise CrossknowError(f"{path} holds no scored sequence")
    return table


def _value(summary: pd.DataFrame, label: str, column: str) -> float | None:
    rows = summary[summary["label"] == label]
    value = rows[column].iloc[0] if len(rows) else None
    return None if value is None or pd.isna(value) else float(value)


def _family(summary: pd.DataFrame, method: str, by: str, **fixed: int) -> pd.DataFrame:
    rows = summary[summary["method"] == method]
    for column, value in fixed.items():
        rows = rows[rows[column] == value]
    return rows.sort_values(by)


def findings(summary: pd.DataFrame) -> list[str]:
    """The run's readings of the paper's section 5.1 findings, one sentence each, for the settings present."""
    lines = []
    if "original" in set(summary["label"]):
        first, last = _value(summary, "original", "first_loss"), _value(summary, "original", "last_loss")
        onset = _value(summary, "original", "onset_step")
        ending = f", overfitting onset at step {onset:.0f}." if onset is not None else ", no overfitting onset."
        lines.append(f"Originals: loss {first:.3f} → {last:.3f}{ending}")
    for method, title in (("mask", "(1) mask-X"), ("partial", "partial-a (5.1.2 (1))")):
        family = _family(summary, method, "a" if method == "partial" else "x")
        if len(family):
            parts = [f"{row.label} {row.first_loss:.3f} → {row.last_loss:.3f}"
                     + (f" (▲ {row.onset_step:.0f})" if pd.notna(row.onset_step) else "")
                     for row in family.itertuples()]
            lines.append(f"{title}, loss first → last: " + "; ".join(parts) + ".")
    at_eight = summary[summary["x"] == 8]
    window = reorder_window(summary, 8)
    at_eight = at_eight[(at_eight["method"] != "reorder") | (at_eight["y"] == window)].dropna(subset=["gap_first"])
    if len(at_eight):
        ranked = at_eight.sort_values("gap_first")
        lines.append("(2) At 8%, gap to the originals at the first step, smallest first: "
                     + "; ".join(f"{row.label} {row.gap_first:+.3f}" for row in ranked.itertuples()) + ".")
    reorder = _family(summary, "reorder", "y", x=4)
    if len(reorder) > 1:
        spread = reorder["first_loss"].max() - reorder["first_loss"].min()
        lines.append(f"(3) reorder-4@Y over windows {', '.join(str(int(y)) for y in reorder['y'])}: first-step loss "
                     f"spans {spread:.3f} nats (gaps to the originals "
                     f"{', '.join(f'{g:+.3f}' for g in reorder['gap_first'].dropna())}).")
    rewrites = summary[summary["method"].isin(("syntax", "lexicon", "semantic", "translation")) & (summary["x"] == 40)]
    if len(rewrites.dropna(subset=["gap_last"])):
        ranked = rewrites.dropna(subset=["gap_last"]).sort_values("gap_last")
        lines.append("Rewrites at 40% (5.1.2 (2)), gap to the originals at the last step, smallest first: "
                     + "; ".join(f"{row.label} {row.gap_last:+.3f}" for row in ranked.itertuples()) + ".")
    return lines


def _overview(table: pd.DataFrame) -> str:
    steps = sorted(int(s) for s in table["step"].unique())
    variants = table.drop_duplicates("variant_id")
    n_original = int((variants["method"] == "original").sum())
    langs = ", ".join(sorted(variants["lang"].unique()))
    return (f"{len(variants)} sequences ({n_original} originals, {len(variants) - n_original} perturbed; {langs}) "
            f"scored at {len(steps)} checkpoints, steps {steps[0]} to {steps[-1]}.")


def _records(frame: pd.DataFrame) -> list[dict]:
    """Rows as JSON-ready dicts: NaN and <NA> as None, numpy scalars as Python numbers."""
    return [{key: None if pd.isna(value) else (value.item() if hasattr(value, "item") else value)
             for key, value in row.items()} for row in frame.to_dict(orient="records")]


def findings_of_run(run: Path) -> list[str]:
    """`findings` of the summary a report of run directory `run` saved (perturbation_summary.json)."""
    summary = json.loads((Path(run) / SUMMARY_FILE).read_text(encoding="utf-8"))
    return findings(pd.DataFrame(summary["settings"], columns=["label", *SETTING, *SUMMARY_COLUMNS[1:]]))


def _texts(run: Path) -> dict[str, str]:
    """Each variant's text, from the sequences file the run's config.yaml names."""
    import yaml

    variants = Path((yaml.safe_load((run / CONFIG_FILE).read_text(encoding="utf-8")) or {}).get("variants", ""))
    if not variants.is_file():
        raise CrossknowError(f"{run / CONFIG_FILE}: the sequences file {variants} is gone; the per-token figures need "
                             "the sequences' texts")
    return {sequence.variant_id: sequence.text for sequence in read_sequences(variants)}


def write_perturbation_report(run: Path, onset_params: OnsetParams = OnsetParams(), pos_relative: bool = False) -> Path:
    """Write report.html, perturbation_summary.json and figures/ of trace-sequences run directory `run` from its
    sequence_loss.parquet and, where the run kept per-token losses (token_loss.parquet), the section 5.2 figures
    (`crossknow.report.token_loss_figures`; `pos_relative`: Fig. 11's POS panel plots the change of the loss
    rather than the loss); returns the report's path."""
    run = Path(run)
    table = _read(run)
    curves, summary = sequence_curves(table), curve_summary(table, onset_params)
    atomic_write_json(run / SUMMARY_FILE, {"onset_params": {"tol": onset_params.tol, "patience": onset_params.patience},
                                           "settings": _records(summary)})
    lines = findings(summary)
    summary_rows = [list(row.values()) for row in _records(summary[SUMMARY_COLUMNS])]
    shown = [html.table("table-summary", "Per setting: mean loss (nats per token), minimum, overfitting onset and "
                        "gap to the originals", SUMMARY_HEADERS, summary_rows)]
    for heading, specs in (("Figures", FIGURES), ("All token perturbations (Appendix A.3.2)", APPENDIX_FIGURES)):
        drawn = [(spec, perturbation_figure(curves, spec, onset_params)) for spec in specs]
        parts = [save_figure(run, spec.name, figure, spec.caption) for spec, figure in drawn if figure is not None]
        if parts:
            shown += [f"<h2>{heading}</h2>", *parts]
    wide = curves.pivot_table(index="step", columns="label", values="mean_loss", sort=False).reset_index()
    collapsed = [("Mean loss of every setting at every step", [html.table(
        "table-curves", "Mean sequence loss per step", [str(c) for c in wide.columns], wide.itertuples(index=False))])]
    if (run / TOKEN_FILE).is_file():
        from crossknow.report.token_loss_figures import token_loss_section

        section = token_loss_section(run, table, pd.read_parquet(run / TOKEN_FILE), _texts(run),
                                     pos_relative=pos_relative)
        lines += section.findings
        shown += section.figures
        collapsed += section.collapsed
    collapsed += [("Run: config and inputs", [html.meta_table(run_meta(run))]),
                  ("Definitions", [html.paragraph(text) for text in DEFINITIONS])]
    if len(lines) > 1:
        shown.insert(0, '<ul id="findings">' + "".join(f"<li>{escape(line)}</li>" for line in lines[1:]) + "</ul>")
    lead = " ".join([_overview(table), *lines[:1]])
    path = run / REPORT_FILE
    atomic_write_text(path, html.report_page("crossknow: sequence loss under perturbation", lead, shown, collapsed))
    return path
