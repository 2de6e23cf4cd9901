"""The perturbation figures of the full paper's section 5.1 (Figs. 5-9) and Appendix A.3.2, from the curves of
`crossknow.dynamics.sequence_curves`: mean loss of original and perturbed sequences over checkpoints, the
originals drawn black, ▲ = overfitting onset of a curve where it has one.

Each figure is a selection of settings (`FIGURES`); it is drawn only when some of its settings are present.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from crossknow.data.sequence_variants import REWRITE_METHODS, TOKEN_METHODS
from crossknow.dynamics.onset import OnsetParams, overfitting_onset
from crossknow.report.figures import ONSET_MARKER

Selection = Callable[[pd.DataFrame], pd.Series]
"""Which rows of the curves table (label, method, x, y, a, step, mean_loss, ...) a figure draws."""


@dataclass(frozen=True)
class PerturbationFigure:
    """One figure: its file name, title, caption and selection of settings."""

    name: str
    title: str
    caption: str
    select: Selection
    family: bool = False
    """One method at several strengths: coloured along a sequential colour map rather than by category."""


FIG6_WINDOW = 3
"""The reorder window of Fig. 6: the authors' code runs reorder-X@3 for every X (its 'retoken-8@3'); the paper's
text does not name Fig. 6's window."""


def reorder_window(curves: pd.DataFrame, x: int) -> int | None:
    """The reorder window that Fig. 6 shows at `x` percent: `FIG6_WINDOW` (3) when present, else the smallest present
    (crossknow's choice for runs without window 3)."""
    windows = sorted(int(y) for y in curves.loc[(curves["method"] == "reorder") & (curves["x"] == x), "y"].dropna()
                     .unique())
    return FIG6_WINDOW if FIG6_WINDOW in windows else (windows[0] if windows else None)


def _fig6(curves: pd.DataFrame) -> pd.Series:
    window = reorder_window(curves, 8)
    at_eight = curves["method"].isin(TOKEN_METHODS) & (curves["x"] == 8)
    return at_eight & ((curves["method"] != "reorder") | (curves["y"] == window))


def _method(method: str) -> Selection:
    return lambda curves: curves["method"] == method


FIGURES = (
    PerturbationFigure("fig5-mask", "Fig. 5: mask-X", "Mean loss of mask-X sequences (X% of tokens replaced by the "
                       "unknown token) and of their originals; ▲ overfitting onset", _method("mask"), family=True),
    PerturbationFigure("fig6-token-8", "Fig. 6: token perturbations at 8%", "Mean loss of every token perturbation "
                       "at 8% edit distance (reorder at the authors' window 3, or at the smallest window present) and "
                       "of the originals; ▲ overfitting onset", _fig6),
    PerturbationFigure("fig7-reorder-4", "Fig. 7: reorder-4@Y", "Mean loss of reorder-4@Y sequences (4% edit distance "
                       "by swaps inside windows of Y tokens) and of the originals; ▲ overfitting onset",
                       lambda c: (c["method"] == "reorder") & (c["x"] == 4), family=True),
    PerturbationFigure("fig8-partial", "Fig. 8: partial-a", "Mean loss of the a-th of four segments of each sequence, "
                       "scored alone, and of the originals; ▲ overfitting onset", _method("partial"), family=True),
    PerturbationFigure("fig9-rewrite-40", "Fig. 9: rewrites at 40%", "Mean loss of sequences with 40% of their "
                       "sentences rewritten (syntax, lexicon, semantic) or translated, and of the originals; ▲ "
                       "overfitting onset", lambda c: c["method"].isin(REWRITE_METHODS) & (c["x"] == 40)),
)
"""The paper's figures 5 to 9, in order."""

APPENDIX_FIGURES = tuple(
    PerturbationFigure(f"a3-{method}", f"{method}-X", f"Mean loss of {method}-X sequences and of the originals "
                       "(Appendix A.3.2); ▲ overfitting onset", _method(method), family=True)
    for method in ("random", "delete", "monosyn", "mltsyn")
)
"""Appendix A.3.2: every other token perturbation at all its strengths (mask-X is Fig. 5)."""


def perturbation_figure(curves: pd.DataFrame, spec: PerturbationFigure,
                        onset_params: OnsetParams = OnsetParams()) -> Figure | None:
    """The figure `spec` selects from `curves` with the originals' curve, or None when it selects no setting."""
    chosen = curves[spec.select(curves) & (curves["method"] != "original")]
    if chosen.empty:
        return None
    labels = list(dict.fromkeys(chosen["label"]))
    if spec.family:
        colour_map = colormaps["viridis"]
        colours = {label: colour_map(0.85 * i / max(len(labels) - 1, 1)) for i, label in enumerate(labels)}
    else:
        colours = {label: f"C{i % 10}" for i, label in enumerate(labels)}
    figure = Figure(figsize=(7, 4.2))
    axes = figure.add_subplot()
    originals = curves[curves["method"] == "original"]
    drawn = [("original", originals, "black")] if not originals.empty else []
    drawn += [(label, chosen[chosen["label"] == label], colours[label]) for label in labels]
    for label, curve, colour in drawn:
        n = int(curve["n_sequences"].iloc[0])
        style = {"linewidth": 2.4, "linestyle": "--"} if label == "original" else {"linewidth": 1.5}
        axes.plot(curve["step"], curve["mean_loss"], marker="o", markersize=3.5, color=colour,
                  label=f"{label} (n={n})", **style)
        onset = overfitting_onset(curve["step"], curve["mean_loss"], tol=onset_params.tol,
                                  patience=onset_params.patience)
        if onset is not None:
            value = float(curve.loc[curve["step"] == onset, "mean_loss"].iloc[0])
            axes.scatter([onset], [value], color=colour, **ONSET_MARKER)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel("training step")
    axes.set_ylabel("mean sequence loss (nats per token)")
    axes.set_title(spec.title + " (▲ overfitting onset)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, ncols=2 if len(drawn) > 6 else 1)
    return figure
