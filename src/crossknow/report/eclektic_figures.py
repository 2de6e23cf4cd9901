"""ECLEKTIC's figures, drawn with matplotlib's object API like `report.figures` (render with `png_bytes`), from
plain tables: `matrix_heatmap`, a source x target matrix as the paper's Figures 3 and 5 draw it (percentages over
"numerator/denominator" on a fixed 0-100% scale, the macro means of columns and rows in strips beside it), and
`scaling_figure`, success and transfer against parameter count on a log axis (Figure 4), intervals as error bars.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from crossknow.report.figures import panel_message

PAPER_ORDER = ("de", "en", "fr", "es", "it", "pt", "id", "he", "hi", "ko", "ja", "zh")
"""The order of languages on the axes of the paper's Figures 3 and 5 (Latin script first, then the rest)."""
CELL_COLUMNS = ("source_lang", "target_lang", "numerator", "denominator")
"""The columns `matrix_heatmap` reads: one row per (source, target) cell that has at least one example."""
SCALING_COLUMNS = ("model", "params", "overall", "overall_half_width", "transfer", "transfer_half_width")
"""The columns `scaling_figure` reads: one row per model; values and half-widths as fractions (0-1)."""
COLOUR_MAP = "RdBu"
"""Red (0%) through white to blue (100%): blue is better, red is worse, as in the paper."""


def language_order(languages: Iterable[str]) -> list[str]:
    """`languages` in the paper's figure order, any language it does not list after them alphabetically."""
    given = set(languages)
    return [lang for lang in PAPER_ORDER if lang in given] + sorted(given - set(PAPER_ORDER))


def percent(value: float) -> str:
    """A fraction as the paper prints it in its figures: 0.375 -> '37.5%'."""
    return f"{100 * value:.1f}%"


def _check_columns(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise ValueError(f"{what} needs the columns {list(columns)}; missing {missing}")


def matrix_grid(cells: pd.DataFrame, rows: Sequence[str],
                columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Numerators, denominators and values (NaN where a cell has no example or a denominator of 0) as arrays of
    target `rows` x source `columns`."""
    numerators = np.zeros((len(rows), len(columns)), dtype=int)
    denominators = np.zeros_like(numerators)
    row_of, column_of = {lang: i for i, lang in enumerate(rows)}, {lang: j for j, lang in enumerate(columns)}
    for cell in cells.itertuples(index=False):
        i, j = row_of[cell.target_lang], column_of[cell.source_lang]
        numerators[i, j], denominators[i, j] = int(cell.numerator), int(cell.denominator)
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.where(denominators > 0, numerators / np.maximum(denominators, 1), np.nan)
    return numerators, denominators, values


def _text_colour(value: float) -> str:
    """White on the dark ends of the colour scale, black on its pale middle."""
    return "white" if abs(value - 0.5) > 0.3 else "black"


def _draw_cells(axes: Axes, values: np.ndarray, labels: np.ndarray | None, font_size: float) -> object:
    """One heatmap panel: coloured cells on the fixed 0-1 scale, each with its value (and `labels` below it)."""
    cmap = colormaps[COLOUR_MAP].with_extremes(bad="white")
    image = axes.imshow(np.ma.masked_invalid(values), cmap=cmap, norm=Normalize(0.0, 1.0), aspect="auto")
    for (i, j), value in np.ndenumerate(values):
        if math.isnan(value):
            continue
        text = percent(value) if labels is None else f"{percent(value)}\n{labels[i, j]}"
        axes.text(j, i, text, ha="center", va="center", fontsize=font_size, color=_text_colour(value),
                  linespacing=1.3)
    axes.set_xticks(np.arange(values.shape[1]) - 0.5, minor=True)
    axes.set_yticks(np.arange(values.shape[0]) - 0.5, minor=True)
    axes.grid(which="minor", color="#dddddd", linewidth=0.6)
    axes.tick_params(which="minor", length=0)
    return image


def macro_means(values: np.ndarray, axis: int) -> np.ndarray:
    """The unweighted mean of the non-empty (non-NaN) cells of a target x source array along `axis`: axis 0
    gives one mean per source language (the paper's bottom row), axis 1 one per target; NaN where all are
    empty."""
    counts = np.sum(~np.isnan(values), axis=axis)
    sums = np.nansum(values, axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def off_diagonal(values: np.ndarray, rows: Sequence[str], columns: Sequence[str]) -> np.ndarray:
    """A copy of the target x source array `values` with the cells where source = target emptied (NaN)."""
    kept = values.astype(float)
    for i, target in enumerate(rows):
        if target in columns:
            kept[i, list(columns).index(target)] = np.nan
    return kept


def matrix_heatmap(cells: pd.DataFrame, title: str, *, sources: Sequence[str] | None = None,
                   targets: Sequence[str] | None = None, diagonal_in_means: bool = True) -> Figure:
    """The source x target heatmap of one metric (see the module's docstring).

    `cells` has the columns of CELL_COLUMNS; a (source, target) pair absent from it, or with denominator 0,
    is an empty cell. `sources`/`targets` fix the columns/rows (default: those in `cells`, in the paper's
    order). The mean strips are macro means over the non-empty cells (crossknow's choice, following the
    paper's "macro-averaged transfer score"), without the diagonal unless `diagonal_in_means` (the
    transfer diagonal is 100% by definition)."""
    _check_columns(cells, CELL_COLUMNS, "matrix_heatmap")
    columns = list(sources) if sources is not None else language_order(cells["source_lang"])
    rows = list(targets) if targets is not None else language_order(cells["target_lang"])
    if not rows or not columns:
        figure = Figure(figsize=(5, 2))
        panel_message(figure.add_subplot(), f"{title}\nno example")
        return figure
    numerators, denominators, values = matrix_grid(cells, rows, columns)
    labels = np.char.add(np.char.add(numerators.astype(str), "/"), denominators.astype(str))
    with_column_means, with_row_means = len(rows) > 1, len(columns) > 1
    width, height = 1.0 + 0.75 * (len(columns) + with_row_means), 1.2 + 0.55 * (len(rows) + with_column_means)
    figure = Figure(figsize=(max(width, 4.5), max(height, 2.5)), layout="constrained")
    grid = figure.add_gridspec(1 + with_column_means, 1 + with_row_means,
                               width_ratios=[len(columns), 1][: 1 + with_row_means],
                               height_ratios=[len(rows), 1][: 1 + with_column_means])
    main = figure.add_subplot(grid[0, 0])
    font_size = 7.0 if len(columns) > 6 else 8.5
    image = _draw_cells(main, values, labels, font_size)
    averaged = values if diagonal_in_means else off_diagonal(values, rows, columns)
    main.set_xticks(range(len(columns)), columns)
    main.set_yticks(range(len(rows)), rows)
    main.set_ylabel("target language")
    main.set_xlabel("source language")
    main.set_title(title)
    panels = [main]
    if with_row_means:
        row_means = figure.add_subplot(grid[0, 1], sharey=main)
        _draw_cells(row_means, macro_means(averaged, axis=1)[:, np.newaxis], None, font_size)
        row_means.set_xticks([0], ["mean"])
        row_means.tick_params(axis="y", labelleft=False)
        panels.append(row_means)
    if with_column_means:
        column_means = figure.add_subplot(grid[1, 0], sharex=main)
        _draw_cells(column_means, macro_means(averaged, axis=0)[np.newaxis, :], None, font_size)
        column_means.set_yticks([0], ["mean"])
        column_means.set_xlabel("source language")
        main.set_xlabel("")
        panels.append(column_means)
    colour_bar = figure.colorbar(image, ax=panels, shrink=0.6, pad=0.02)
    colour_bar.ax.yaxis.set_major_formatter(lambda tick, _: f"{100 * tick:.0f}%")
    return figure


def params_label(params: float) -> str:
    """A parameter count as a short label: 7.6e9 -> '7.6B', 2.7e8 -> '270M'."""
    if params >= 1e9:
        return f"{params / 1e9:g}B"
    return f"{params / 1e6:.0f}M"


def scaling_figure(points: pd.DataFrame) -> Figure:
    """Overall success and transfer score (percent, with interval bars) against parameter count on a log x
    axis (the paper's Figure 4); `points` has the columns of SCALING_COLUMNS, models without a count are
    left out, and fewer than two counted models leave a message instead of a plot."""
    _check_columns(points, SCALING_COLUMNS, "scaling_figure")
    counted = points[points["params"].notna() & (points["params"] > 0)].sort_values("params", kind="stable")
    figure = Figure(figsize=(7, 4.2))
    axes = figure.add_subplot()
    if len(counted) < 2:
        panel_message(axes, "the size plot needs at least two models with a parameter count")
        return figure
    params = counted["params"].astype(float).to_numpy()
    for metric, colour, label in (("overall", "C0", "overall success"), ("transfer", "C3", "transfer score")):
        axes.errorbar(params, 100 * counted[metric].to_numpy(float),
                      yerr=100 * counted[f"{metric}_half_width"].fillna(0).to_numpy(float), color=colour,
                      marker="o", markersize=5, capsize=3, linewidth=1.5, label=label)
    tops = 100 * (counted["transfer"] + counted["transfer_half_width"].fillna(0)).to_numpy(float)
    for x, top, name in zip(params, tops, counted["model"], strict=True):
        axes.annotate(str(name), (x, top), textcoords="offset points", xytext=(0, 4), ha="center", fontsize=7,
                      color="#444444")
    axes.set_xscale("log")
    axes.set_xticks(params, [params_label(p) for p in params])
    axes.minorticks_off()
    axes.set_ylim(0, 100)
    axes.set_xlabel("parameters (log scale)")
    axes.set_ylabel("score (%)")
    axes.set_title("Overall success and transfer score by model size")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    return figure
