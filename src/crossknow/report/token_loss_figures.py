"""Figs. 10 and 11 of the full paper (section 5.2) and the report section that shows them.

Fig. 10: the original sequences' mean loss per language over a run's checkpoints; Fig. 11: per-token loss of one
language's sequences by script class (its change since the first checkpoint: crossknow's choice, since classes
start nats apart) and by POS (the loss itself, as the paper, or its change with `pos_relative`).
`token_loss_section` draws both for a `--per-token` run and writes token_group_loss.parquet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from crossknow.dynamics.token_groups import (
    SCRIPT_CLASSES,
    group_summary,
    language_curves,
    token_group_table,
)
from crossknow.dynamics.token_pos import POS_TAGS
from crossknow.report import html
from crossknow.report.figures import panel_message, save_figure
from crossknow.store.atomic import atomic_write

GROUP_FILE = "token_group_loss.parquet"
"""The `token_group_table` of a run's original sequences, written beside its report."""
MIN_TOKENS = 10
"""Fewest tokens a group needs (at a step) to be drawn in Fig. 11 or named in the findings."""
LANGUAGE_COLOURS = {"en": "#1f77b4", "ja": "#d62728"}
SCRIPT_COLOURS = {"japanese": "#d62728", "latin": "#1f77b4", "digit": "#2ca02c", "other": "#9467bd",
                  "space": "#8c564b", "unaligned": "#7f7f7f"}
POS_COLOURS = {"NOUN": "C0", "VERB": "C1", "ADJ": "C2", "NUM": "C3", "PUNCT": "black", "PROPN": "C9", "ADP": "C4",
               "AUX": "C5", "ADV": "C6", "PRON": "C8", "DET": "#aec7e8", "CCONJ": "#ffbb78", "SCONJ": "#98df8a",
               "PART": "#c5b0d5", "SYM": "#c49c94", "INTJ": "#f7b6d2", "X": "#7f7f7f", "SPACE": "#dbdb8d"}
"""Distinct colours for the common tags; NUM and PUNCT, the paper's finding, are also drawn thicker."""
RELATIVE_LABEL = "mean token loss − first step (nats)"
ABSOLUTE_LABEL = "mean token loss (nats)"
DEFINITIONS = (
    "Fig. 10: the mean loss (nats per token) of the original sequences of each language at each checkpoint.",
    "Fig. 11: each token of the original sequences of one language is grouped by the script of the characters it "
    "covers (japanese: kana, kanji and Japanese punctuation; latin: Latin letters; digit: 0-9; other; space: "
    "whitespace only; a token of mixed scripts takes the class of most of its characters) and by the POS of the "
    "word it overlaps most (Sudachi, split mode C, mapped to UPOS for Japanese; spaCy en_core_web_sm for English). "
    "A curve of the POS panel is the group's mean token loss, pooled over its tokens, as the paper's Fig. 11 plots it "
    "(its change since the first checkpoint with --pos-loss relative); a curve of the script panel is that mean "
    f"minus its value at the first checkpoint (crossknow's choice). Groups with fewer than {MIN_TOKENS} tokens are "
    "not drawn. Full rules: crossknow.dynamics.token_groups.",
)


def _language_panel(axes: Axes, curves: pd.DataFrame, title: str) -> None:
    for index, (lang, curve) in enumerate(curves.groupby("lang", sort=True)):
        colour = LANGUAGE_COLOURS.get(str(lang), f"C{index + 2}")
        n = int(curve["n_sequences"].max())
        axes.plot(curve["step"], curve["mean_loss"], marker="o", markersize=3.5, color=colour,
                  label=f"{lang} sequences (n={n})")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel("training step")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)


def draw_fig10(runs: Mapping[str, pd.DataFrame]) -> Figure:
    """Fig. 10: one panel per training run (label -> its sequence_loss table), a curve per language of the mean
    loss of its original sequences."""
    figure = Figure(figsize=(5.2 * max(len(runs), 1), 4.2))
    panels = figure.subplots(1, max(len(runs), 1), squeeze=False)[0]
    for axes, (label, table) in zip(panels, runs.items(), strict=False):
        curves = language_curves(table)
        if curves.empty:
            panel_message(axes, f"{label}: no original sequence")
        else:
            _language_panel(axes, curves, label)
    if not runs:
        panel_message(panels[0], "no training run")
    panels[0].set_ylabel("mean sequence loss (nats per token)")
    figure.suptitle("Fig. 10: sequence loss by language")
    return figure


def _group_panel(axes: Axes, table: pd.DataFrame, order: tuple[str, ...], colours: Mapping[str, object],
                 title: str, relative: bool, min_tokens: int) -> None:
    shown = table[table.groupby("group")["n_tokens"].transform("min") >= min_tokens]
    if shown.empty:
        panel_message(axes, f"no group with {min_tokens} tokens or more")
        axes.set_title(title)
        return
    groups = sorted(shown["group"].unique(), key=lambda g: (order.index(g) if g in order else len(order), g))
    for group in groups:
        curve = shown[shown["group"] == group].sort_values("step")
        values = curve["mean_loss"] - (curve["mean_loss"].iloc[0] if relative else 0.0)
        axes.plot(curve["step"], values, marker="o", markersize=3, color=colours.get(group, "#333333"),
                  linewidth=2.4 if group in ("NUM", "PUNCT") else 1.4,
                  label=f"{group} (n={int(curve['n_tokens'].iloc[0])})")
    if relative:
        axes.axhline(0.0, color="grey", linewidth=0.8)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel("training step")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7, ncols=2 if len(groups) > 8 else 1)


def draw_fig11(groups: pd.DataFrame, lang: str, pos_relative: bool = False, script_relative: bool = True,
               min_tokens: int = MIN_TOKENS) -> Figure | None:
    """Fig. 11 for the sequences of language `lang` from a `token_group_table`: script classes (left) and POS
    tags (right); a panel plots each group's mean token loss, or its change since the first step where it is
    `*_relative` (the POS panel plots the loss by default, as the paper; the script panel the change). None when
    the table has no token of `lang`."""
    table = groups[groups["lang"] == lang]
    if table.empty:
        return None
    figure = Figure(figsize=(11, 4.4))
    left, right = figure.subplots(1, 2)
    for axes, kind, order, colours, title, relative in (
        (left, "script", SCRIPT_CLASSES, SCRIPT_COLOURS, "by script", script_relative),
        (right, "pos", POS_TAGS, POS_COLOURS, "by POS", pos_relative),
    ):
        _group_panel(axes, table[table["kind"] == kind], order, colours, title, relative, min_tokens)
        axes.set_ylabel(RELATIVE_LABEL if relative else ABSOLUTE_LABEL)
    figure.suptitle(f"Fig. 11: per-token loss dynamics of {lang} sequences")
    return figure


def token_findings(curves: pd.DataFrame, summary: pd.DataFrame, min_tokens: int = MIN_TOKENS) -> list[str]:
    """One sentence per language on its sequence loss (first, minimum, last; Fig. 10) and one per language and
    grouping on each group's change of mean token loss, largest fall first (Fig. 11)."""
    lines = []
    for lang, curve in curves.groupby("lang", sort=True):
        curve = curve.sort_values("step")
        lowest = curve.loc[curve["mean_loss"].idxmin()]
        lines.append(f"{lang} sequences: mean loss {curve['mean_loss'].iloc[0]:.3f} at step {curve['step'].iloc[0]}, "
                     f"{curve['mean_loss'].iloc[-1]:.3f} at step {curve['step'].iloc[-1]} (last); lowest "
                     f"{lowest['mean_loss']:.3f} at step {lowest['step']}.")
    for (lang, kind), rows in summary[summary["n_tokens"] >= min_tokens].groupby(["lang", "kind"], sort=True):
        ranked = rows.sort_values("change")
        lines.append(f"{lang} tokens by {'script' if kind == 'script' else 'POS'}, change of mean token loss first "
                     "→ last step: " + "; ".join(f"{row.group} {row.change:+.3f}" for row in ranked.itertuples())
                     + ".")
    return lines


@dataclass
class TokenLossSection:
    """The parts of a report that `token_loss_section` returns."""

    findings: list[str]
    """Sentences for the report's list of findings."""
    figures: list[str] = field(default_factory=list)
    """HTML: a heading, Fig. 10 and one Fig. 11 per language."""
    collapsed: list[tuple[str, list[str]]] = field(default_factory=list)
    """(heading, HTML parts) for the report's closed sections: the per-group table and the definitions."""


def token_loss_section(run: Path, sequence_loss: pd.DataFrame, token_loss: pd.DataFrame, texts: Mapping[str, str],
                       run_label: str = "this run", pos_relative: bool = False) -> TokenLossSection:
    """Figs. 10-11 of the original sequences of a trace-sequences run directory `run` (figures/ and GROUP_FILE
    written there): `sequence_loss` and `token_loss` are its two tables, `texts` each variant's text (at least
    every original's), `run_label` names the training run in Fig. 10, `pos_relative` as `draw_fig11`'s."""
    originals = set(sequence_loss.loc[sequence_loss["method"] == "original", "variant_id"])
    groups = token_group_table(token_loss[token_loss["variant_id"].isin(originals)],
                               {key: texts[key] for key in originals if key in texts})
    table = pa.Table.from_pandas(groups, preserve_index=False)
    atomic_write(Path(run) / GROUP_FILE, lambda handle: pq.write_table(table, handle), binary=True)
    curves, summary = language_curves(sequence_loss), group_summary(groups)
    section = TokenLossSection(token_findings(curves, summary))
    section.figures += ["<h2>Per-token loss by language and POS (section 5.2)</h2>",
                        save_figure(run, "fig10-languages", draw_fig10({run_label: sequence_loss}),
                                    "Fig. 10: mean loss of the original sequences of each language")]
    for lang in sorted(groups["lang"].unique()):
        figure = draw_fig11(groups, lang, pos_relative=pos_relative)
        pos = "its change" if pos_relative else "the mean token loss"
        if figure is not None:
            section.figures.append(save_figure(run, f"fig11-tokens-{lang}", figure, f"Fig. 11: {lang} sequences, the "
                                               f"change of the mean token loss by script and {pos} by POS"))
    headers = ["language", "grouping", "group", "tokens", "first step", "loss at first", "last step", "loss at last",
               "change", "min loss", "min step"]
    section.collapsed += [
        ("Mean token loss per group", [html.table("table-token-groups", "Mean token loss (nats) per language and "
                                                  "group, original sequences", headers,
                                                  summary.itertuples(index=False), text_columns=3)]),
        ("Definitions: token groups", [html.paragraph(text) for text in DEFINITIONS]),
    ]
    return section
