"""build_report: the dynamics analyses of a trace as figures, dynamics.json and one self-contained report.html."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from crossknow.dynamics.analysis import DynamicsResult, analyse_dynamics, read_train_log
from crossknow.dynamics.condition_summary import condition_summary
from crossknow.dynamics.losses import LOSS_RATIO_DEFINITION
from crossknow.dynamics.onset import OnsetParams
from crossknow.dynamics.records import DynamicsSummary
from crossknow.dynamics.shapes import SHAPES, ShapeParams
from crossknow.dynamics.transitions import TRANSITIONS
from crossknow.report import html
from crossknow.report.condition_table import lead_sentence, summary_table
from crossknow.report.figures import (
    accuracy_figure,
    correct_loss_figure,
    loss_ratio_figure,
    loss_shapes_figure,
    save_figure,
    train_loss_figure,
    transitions_figure,
)
from crossknow.store.atomic import atomic_write_json, atomic_write_text

REPORT_FILE = "report.html"
DYNAMICS_FILE = "dynamics.json"
FIGURES = ["accuracy", "correct-loss", "loss-ratio", "transitions", "loss-shapes", "train-loss"]
"""Figure ids: <figure id="fig-NAME"> in the HTML, figures/NAME.png on disk (train-loss only with a training log)."""


def _wide(rows: list, value: str, conditions: list[str], checkpoints: Mapping[int, str | None]) -> list[list[object]]:
    """Rows of a step x condition table: step, checkpoint, one value per condition."""
    values = {(row.step, row.condition): getattr(row, value) for row in rows}
    return [[step, checkpoints.get(step), *(values.get((step, c)) for c in conditions)] for step in checkpoints]


def _sections(record: DynamicsSummary, result: DynamicsResult, trace: pd.DataFrame, out_dir: Path,
              train_log: pd.DataFrame | None) -> tuple[list[str], list[str]]:
    """The figures under their headings, with the shape counts (shown open), and the numbers behind them: the
    per-step tables, the onsets, the transition counts, the shape examples (collapsed)."""
    conditions, checkpoints = record.conditions, {s.step: s.checkpoint for s in record.steps}
    step_headers = ["step", "checkpoint", *conditions]
    onsets = {(o.curve, o.condition): o for o in record.onsets}
    ratio_chance = {row.condition: row.chance for row in record.loss_ratio}
    numbers = [html.table(
        "table-conditions", "Items per condition and chance levels",
        ["condition", "items", "chance accuracy", "chance loss ratio"],
        [[c, record.n_items[c], record.chance_accuracy[c], ratio_chance[c]] for c in conditions])]
    shown = ["<h2>Accuracy</h2>",
             save_figure(out_dir, "accuracy", accuracy_figure(result), "Accuracy per condition over training")]
    numbers += [html.table("table-accuracy", "Accuracy per condition at each step", step_headers,
                           _wide(record.accuracy, "accuracy", conditions, checkpoints), text_columns=2)]
    shown += ["<h2>Loss of the correct option</h2>",
              save_figure(out_dir, "correct-loss", correct_loss_figure(result),
                          "Mean loss of the correct option per condition; ▲ overfitting onset")]
    numbers += [html.table("table-correct-loss", "Mean loss of the correct option per condition at each step",
                           step_headers, _wide(record.correct_loss, "mean_correct_loss", conditions, checkpoints),
                           text_columns=2),
                html.table("table-onsets", "Overfitting onsets", ["curve", "condition", "onset step", "min step",
                                                                  "min value"],
                           [[o.curve, o.condition, o.onset_step, o.min_step, o.min_value] for o in record.onsets],
                           text_columns=2)]
    shown += ["<h2>Loss ratio</h2>",
              save_figure(out_dir, "loss-ratio", loss_ratio_figure(result),
                          "Correct option's loss over all options' losses (ratio of sums); dashed: chance")]
    numbers += [html.table("table-loss-ratio", "Loss ratio per condition at each step (ratio of sums)", step_headers,
                           _wide(record.loss_ratio, "loss_ratio", conditions, checkpoints), text_columns=2),
                html.table("table-mean-item-ratio", "Mean of the per-item loss ratios per condition at each step",
                           step_headers, _wide(record.loss_ratio, "mean_item_ratio", conditions, checkpoints),
                           text_columns=2)]
    window = f"step {record.first_step} → {record.last_step}" if record.first_step is not None else "one checkpoint"
    shown += [f"<h2>Instance transitions ({window})</h2>",
              save_figure(out_dir, "transitions", transitions_figure(result),
                          "Share of retained, acquired, forgotten and unacquired items per condition")]
    numbers += [html.table("table-transitions", "Transition counts per condition", ["condition", "items", *TRANSITIONS],
                           [[t.condition, t.n_items, t.retained, t.acquired, t.forgotten, t.unacquired]
                            for t in record.transitions])]
    shown += [f"<h2>Loss shapes of acquired items ({window})</h2>",
              save_figure(out_dir, "loss-shapes", loss_shapes_figure(trace, result),
                          "Example acquired item per shape class: every option's loss, the correct one bold; "
                          "▲ overfitting onset"),
              html.table("table-shapes", "Shape classes of acquired items per condition",
                         ["condition", "acquired", *SHAPES],
                         [[s.condition, s.n_acquired, s.stable_gain, s.loss_shielding, s.unstable]
                          for s in record.shape_counts])]
    numbers += [html.table("table-shape-examples", "The example items shown",
                           ["class", "set", "item", "condition", "correct loss first", "correct loss last",
                            "distractors' mean change"], _example_rows(record), text_columns=4)]
    if train_log is not None:
        log = read_train_log(train_log)
        if len(log):
            onset = onsets.get(("train-loss", None))
            shown += ["<h2>Training loss</h2>", save_figure(
                out_dir, "train-loss", train_loss_figure(log, onset.onset_step if onset else None),
                "Training loss (learning rate dotted); ▲ overfitting onset")]
    return shown, numbers


def _example_rows(record: DynamicsSummary) -> list[list[object]]:
    by_key = {(s.set, s.item_id): s for s in record.shapes}
    rows: list[list[object]] = []
    for shape in SHAPES:
        ref = record.shape_examples.get(shape)
        if ref is None:
            rows.append([shape, None, None, None, None, None, None])
            continue
        item = by_key[(ref.set, ref.item_id)]
        rows.append([shape, item.set, item.item_id, item.condition, item.correct_first, item.correct_last,
                     item.distractor_mean_change])
    return rows


def build_report(
    trace: pd.DataFrame,
    out_dir: Path,
    *,
    train_log: pd.DataFrame | None = None,
    meta: dict | None = None,
    first_step: int | None = None,
    last_step: int | None = None,
    shape_params: ShapeParams = ShapeParams(),
    onset_params: OnsetParams = OnsetParams(),
) -> Path:
    """Analyse `trace` and write, under `out_dir`: figures/*.png, dynamics.json (every number, a `DynamicsSummary`)
    and report.html; return the report's path. The report leads with the finding (a sentence, then the summary table
    per condition: first -> last accuracy and loss ratio, transitions, onset), then the figures (embedded); the
    per-step numbers, `meta` (config, inputs) and the definitions come last, collapsed; report.html needs no other
    file. `first_step`/`last_step` choose the checkpoints that transitions and loss shapes compare (default: the
    first and the last).
    """
    out_dir = Path(out_dir)
    result = analyse_dynamics(trace, first_step=first_step, last_step=last_step, train_log=train_log,
                              shape_params=shape_params, onset_params=onset_params)
    record = result.to_record()
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = condition_summary(result)
    lead = (f"{lead_sentence(summary)} {len(record.steps)} checkpoints (steps {record.steps[0].step} to "
            f"{record.steps[-1].step}), {sum(record.n_items.values())} items in {len(record.conditions)} conditions.")
    shown, numbers = _sections(record, result, trace, out_dir, train_log)
    findings = [summary_table(summary), *(html.paragraph(note, "note") for note in record.notes), *shown]
    collapsed = [("Numbers behind the figures", numbers)]
    if meta:
        collapsed.append(("Run: config and inputs", [html.meta_table(meta)]))
    collapsed.append(("Definitions", [
        html.preformatted(record.shape_definitions), html.preformatted(record.onset_definition),
        html.preformatted(LOSS_RATIO_DEFINITION),
        html.table("table-parameters", "Parameters", ["parameter", "value"],
                   [[f"shape {k}", v] for k, v in record.shape_params.items()]
                   + [[f"onset {k}", v] for k, v in record.onset_params.items()])]))
    atomic_write_json(out_dir / DYNAMICS_FILE, record.model_dump(mode="json"))
    page = html.report_page("crossknow: knowledge-acquisition dynamics", lead, findings, collapsed)
    return atomic_write_text(out_dir / REPORT_FILE, page)
