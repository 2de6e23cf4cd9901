"""Figures of a recipe comparison (full paper Figs. 12, 13, A-3, A-4): the runs side by side per condition.

Each function takes a `RecipeComparison` and returns a matplotlib `Figure` (Agg, no pyplot). The reference
run (the first given: the baseline) is drawn black and dashed in every figure; the others take the palette.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from matplotlib.figure import Figure

from crossknow.dynamics.recipe_comparison import RecipeComparison
from crossknow.report.figures import ONSET_MARKER

XAxis = Literal["step", "progress"]
"""The curves' x axis: the training step, or progress = step / the run's last step compared (crossknow's
choice for runs that trained for different numbers of steps: 1 is each run's last checkpoint)."""

CURVES = {
    "accuracy": ("accuracy", "accuracy", "Accuracy per condition and recipe"),
    "correct-loss": ("mean_correct_loss", "mean loss of the correct option",
                     "Loss of the correct option per condition and recipe (▲ overfitting onset)"),
    "loss-ratio": ("loss_ratio", "loss ratio (correct / all options)", "Loss ratio per condition and recipe"),
}
"""Figure name -> (curves column, y label, title) of `recipe_curves_figure`."""


def run_styles(labels: list[str]) -> dict[str, dict]:
    """Line style per run label: the reference (first) black and dashed, on top, the rest palette colours, solid."""
    styles = {labels[0]: {"color": "black", "linestyle": "--", "zorder": 3}}
    for i, label in enumerate(labels[1:]):
        styles[label] = {"color": f"C{i % 10}", "linestyle": "-"}
    return styles


def recipe_curves_figure(comparison: RecipeComparison, name: str, x: XAxis = "step") -> Figure:
    """One panel per condition, one curve per run, of the CURVES entry `name`; dashed grey: chance (accuracy,
    loss ratio); ▲: a run's overfitting onset (correct-option loss)."""
    column, ylabel, title = CURVES[name]
    conditions, labels = comparison.conditions, [run.label for run in comparison.runs]
    styles = run_styles(labels)
    figure = Figure(figsize=(3.6 * len(conditions) + 1.6, 3.8), layout="constrained")
    panels = np.atleast_1d(figure.subplots(1, len(conditions), sharey=True))
    onsets = comparison.onsets.dropna(subset=["onset_step"]).set_index(["label", "condition"])["onset_step"]
    for axes, condition in zip(panels, conditions, strict=True):
        rows = comparison.curves[comparison.curves["condition"] == condition]
        for label in labels:
            curve = rows[rows["label"] == label].sort_values("step")
            axes.plot(curve[x], curve[column], marker="o", markersize=3.5, label=label, **styles[label])
            if name == "correct-loss" and (label, condition) in onsets.index:
                at = curve[curve["step"] == int(onsets[(label, condition)])]
                axes.scatter(at[x], at[column], color=styles[label]["color"], **ONSET_MARKER)
        if name in ("accuracy", "loss-ratio") and len(rows):
            axes.axhline(float(rows["chance"].iloc[0]), color="grey", linestyle=":", linewidth=1, label="chance")
        axes.set_title(condition)
        axes.set_xlabel("training step" if x == "step" else "training progress (step / last step)")
        axes.grid(alpha=0.3)
    if name == "accuracy":
        panels[0].set_ylim(-0.02, 1.02)
    panels[0].set_ylabel(ylabel)
    handles, names = panels[0].get_legend_handles_labels()
    figure.legend(handles, names, loc="outside right center", fontsize=8)
    figure.suptitle(title)
    return figure


def final_accuracy_figure(comparison: RecipeComparison) -> Figure:
    """Grouped bars: each run's final accuracy per condition, the value written on each bar; a dotted line over
    each group marks chance."""
    conditions, labels = comparison.conditions, [run.label for run in comparison.runs]
    styles = run_styles(labels)
    final = comparison.final.set_index(["condition", "label"])
    figure = Figure(figsize=(max(6.0, 1.2 + len(conditions) * (0.55 * len(labels) + 0.6)), 4.2))
    axes = figure.add_subplot()
    width = 0.8 / len(labels)
    positions = np.arange(len(conditions))
    for i, label in enumerate(labels):
        values = [float(final.loc[(c, label), "accuracy_last"]) for c in conditions]
        style = styles[label]
        bars = axes.bar(positions + (i - (len(labels) - 1) / 2) * width, values, width,
                        color="white" if style["linestyle"] == "--" else style["color"],
                        edgecolor=style["color"], hatch="//" if style["linestyle"] == "--" else None, label=label)
        axes.bar_label(bars, fmt="%.2f", fontsize=7, padding=1)
    for position, condition in zip(positions, conditions, strict=True):
        chance = float(final.loc[condition, "chance"].iloc[0])
        axes.hlines(chance, position - 0.45, position + 0.45, colors="grey", linestyles=":", linewidth=1.2)
    axes.set_xticks(positions, conditions)
    axes.set_ylim(0, 1.08)
    axes.set_ylabel("final accuracy")
    axes.set_title("Final accuracy per condition and recipe (dotted: chance)")
    axes.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    axes.grid(axis="y", alpha=0.3)
    return figure
