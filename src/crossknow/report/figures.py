"""The dynamics figures, drawn with matplotlib's object API (Agg canvas, no pyplot, no global state).

Each function takes the analyses' tables and returns a `Figure`; `png_bytes` renders one. A figure whose
data is missing (no acquired item of a class, a single checkpoint) says so in its panel instead of failing.
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from crossknow.dynamics.analysis import DynamicsResult
from crossknow.dynamics.onset import overfitting_onset
from crossknow.dynamics.shapes import SHAPES
from crossknow.dynamics.transitions import TRANSITIONS
from crossknow.report import html
from crossknow.store.atomic import atomic_write

FIGURES_DIR = "figures"
"""Where a report's figures are saved as PNG files, beside report.html."""

TRANSITION_COLOURS = {"retained": "#4c72b0", "acquired": "#55a868", "forgotten": "#c44e52", "unacquired": "#bbbbbb"}
ONSET_MARKER = {"marker": "^", "s": 90, "zorder": 5, "edgecolors": "black", "linewidths": 0.6}


def png_bytes(figure: Figure, dpi: int = 110) -> bytes:
    """The figure rendered as PNG."""
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def save_figure(out_dir: Path, name: str, figure: Figure, caption: str) -> str:
    """Write `figure` as out_dir/figures/NAME.png and return its HTML <figure id="fig-NAME"> (PNG embedded)."""
    png = png_bytes(figure)
    relative = f"{FIGURES_DIR}/{name}.png"
    atomic_write(out_dir / relative, lambda handle: handle.write(png), binary=True)
    return html.figure(f"fig-{name}", png, relative, caption)


def _colours(conditions: list[str]) -> dict[str, str]:
    palette = [f"C{i}" for i in range(10)]
    return {condition: palette[i % len(palette)] for i, condition in enumerate(conditions)}


def panel_message(axes: Axes, text: str) -> None:
    """Write `text` in the middle of an empty panel (a figure whose data is missing says why)."""
    axes.text(0.5, 0.5, text, ha="center", va="center", transform=axes.transAxes, wrap=True, color="#555555")
    axes.set_xticks([])
    axes.set_yticks([])


def _chance_lines(axes: Axes, chances: dict[str, float]) -> None:
    for value in sorted(set(round(v, 12) for v in chances.values())):
        label = f"chance (1/{round(1 / value)})" if value > 0 and abs(1 / value - round(1 / value)) < 1e-9 else "chance"
        axes.axhline(value, color="grey", linestyle="--", linewidth=1, label=label)


def _per_condition(result: DynamicsResult, table: pd.DataFrame, column: str, ylabel: str, title: str) -> Figure:
    figure = Figure(figsize=(7, 4.2))
    axes = figure.add_subplot()
    colours = _colours(result.conditions)
    for condition in result.conditions:
        curve = table[table["condition"] == condition].sort_values("step")
        axes.plot(curve["step"], curve[column], marker="o", markersize=4, color=colours[condition], label=condition)
    axes.set_xlabel("training step")
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.grid(alpha=0.3)
    return figure


def accuracy_figure(result: DynamicsResult) -> Figure:
    """Accuracy per condition over steps (full paper Fig. 2), with the chance level."""
    figure = _per_condition(result, result.accuracy, "accuracy", "accuracy", "Accuracy per condition")
    axes = figure.axes[0]
    _chance_lines(axes, result.chance)
    axes.set_ylim(-0.02, 1.02)
    axes.legend(fontsize=8)
    return figure


def correct_loss_figure(result: DynamicsResult) -> Figure:
    """Mean loss of the correct option per condition over steps (full paper Fig. 3); ▲ = overfitting onset."""
    figure = _per_condition(result, result.correct_loss, "mean_correct_loss", "mean loss of the correct option",
                            "Loss of the correct sequences (▲ overfitting onset)")
    axes = figure.axes[0]
    colours = _colours(result.conditions)
    onsets = result.onsets[result.onsets["curve"] == "correct-loss"]
    for _, row in onsets.iterrows():
        if pd.isna(row["onset_step"]):
            continue
        curve = result.correct_loss[result.correct_loss["condition"] == row["condition"]].set_index("step")
        axes.scatter([row["onset_step"]], [curve.loc[int(row["onset_step"]), "mean_correct_loss"]],
                     color=colours[row["condition"]], **ONSET_MARKER)
    axes.legend(fontsize=8)
    return figure


def loss_ratio_figure(result: DynamicsResult) -> Figure:
    """Loss ratio (correct / all options, ratio of sums) per condition over steps (full paper Fig. 4)."""
    figure = _per_condition(result, result.loss_ratio, "loss_ratio", "loss ratio (correct / all options)",
                            "Loss ratio of the correct sequences")
    axes = figure.axes[0]
    chance = result.loss_ratio.drop_duplicates("condition").set_index("condition")["chance"]
    _chance_lines(axes, {str(k): float(v) for k, v in chance.items()})
    axes.legend(fontsize=8)
    return figure


def transitions_figure(result: DynamicsResult) -> Figure:
    """Stacked bars: share of each transition type per condition (short paper Fig. 4), counts written in."""
    figure = Figure(figsize=(7, 0.9 + 0.7 * max(len(result.conditions), 1)))
    axes = figure.add_subplot()
    counts = result.transition_counts
    if counts is None or counts.empty:
        panel_message(axes, "transitions need two checkpoints; " + "; ".join(result.notes))
        return figure
    counts = counts.set_index("condition").reindex(result.conditions)
    left = pd.Series(0.0, index=counts.index)
    for kind in TRANSITIONS:
        share = counts[kind] / counts["n_items"]
        bars = axes.barh(counts.index, share, left=left, color=TRANSITION_COLOURS[kind], label=kind)
        for bar, n in zip(bars, counts[kind], strict=True):
            if n and bar.get_width() > 0.04:
                axes.text(bar.get_x() + bar.get_width() / 2, bar.get_y() + bar.get_height() / 2, str(int(n)),
                          ha="center", va="center", fontsize=8)
        left = left + share
    axes.invert_yaxis()
    axes.set_xlim(0, 1)
    axes.set_xlabel(f"share of items (step {result.first_step} → {result.last_step})")
    axes.set_title("Instance transitions")
    axes.legend(ncols=4, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.35 if len(counts) < 3 else -0.2))
    return figure


def _shape_panel(axes: Axes, trace: pd.DataFrame, result: DynamicsResult, shape: str) -> None:
    example = result.examples.get(shape)
    if example is None:
        reason = "no acquired item" if result.shapes is None or result.shapes.empty else f"no {shape} item"
        panel_message(axes, f"{shape}\n{reason}" + ("" if result.shapes is not None else " (one checkpoint)"))
        return
    set_name, item_id = example
    rows = trace[(trace["set"] == set_name) & (trace["item_id"] == item_id)
                 & (trace["step"] >= result.first_step) & (trace["step"] <= result.last_step)]
    for option, curve in rows.sort_values("step").groupby("option_index", sort=True):
        correct = bool(curve["is_answer"].iloc[0])
        style = {"linewidth": 2.6, "marker": "o", "markersize": 6, "markerfacecolor": "#ffe066", "color": "black",
                 "zorder": 4} if correct else {"linewidth": 1.2, "marker": ".", "alpha": 0.8}
        line = axes.plot(curve["step"], curve["loss"], label=("correct" if correct else f"option {option}"), **style)[0]
        onset = overfitting_onset(curve["step"], curve["loss"], tol=result.onset_params.tol,
                                  patience=result.onset_params.patience)
        if onset is not None:
            value = float(curve.loc[curve["step"] == onset, "loss"].iloc[0])
            axes.scatter([onset], [value], color=line.get_color(), **ONSET_MARKER)
    condition = rows["condition"].iloc[0]
    axes.set_title(f"{shape}\n{set_name} / {item_id} ({condition})", fontsize=9)
    axes.set_xlabel("training step")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7)


def loss_shapes_figure(trace: pd.DataFrame, result: DynamicsResult) -> Figure:
    """One example acquired item per shape class: every option's loss over steps, the correct one bold with
    bright circles (short paper Fig. 5); ▲ = overfitting onset of a curve, where it has one."""
    figure = Figure(figsize=(12, 4))
    panels = figure.subplots(1, len(SHAPES))
    for axes, shape in zip(panels, SHAPES, strict=True):
        _shape_panel(axes, trace, result, shape)
    panels[0].set_ylabel("loss (mean token cross-entropy)")
    return figure


def train_loss_figure(log: pd.DataFrame, onset_step: int | None) -> Figure:
    """Training loss over steps (learning rate on a second axis when logged); ▲ = overfitting onset."""
    figure = Figure(figsize=(7, 4.2))
    axes = figure.add_subplot()
    axes.plot(log["step"], log["loss"], color="C0", linewidth=1.2, label="training loss")
    if onset_step is not None:
        axes.scatter([onset_step], [float(log.loc[log["step"] == onset_step, "loss"].iloc[0])], color="C0",
                     **ONSET_MARKER)
    if "learning_rate" in log.columns and log["learning_rate"].notna().any():
        rate_axes = axes.twinx()
        rate_axes.plot(log["step"], log["learning_rate"], color="C1", linewidth=1, linestyle=":", label="learning rate")
        rate_axes.set_ylabel("learning rate", color="C1")
    axes.set_xlabel("training step")
    axes.set_ylabel("training loss")
    axes.set_title("Training loss")
    axes.grid(alpha=0.3)
    return figure
