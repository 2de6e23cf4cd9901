"""Cross-Lingual Pitfalls figures and the report of `crossknow pitfalls eval`.

- `accuracy_figure`: English and target-language accuracy per model (the paper's Fig. 3 and 5).
- `affinity_heatmap`: the Relative Affinity Score D_{x,y} with its numbers in the cells (the paper's Fig. 7).
- `distance_heatmap`, `tsne_figure`: the embedding analysis (the paper's Fig. 8 and 9).
- `write_eval_report`: report.html of an evaluation run, leading with the pair table.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import yaml
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from crossknow.data.pair_rules import FLAWS
from crossknow.pitfalls.affinity.ras import AffinityMatrix
from crossknow.pitfalls.eval_records import CELLS, PitfallsEvalConfig, PitfallsEvalMetrics
from crossknow.report import html
from crossknow.report.figures import save_figure
from crossknow.store.atomic import atomic_write_text

REPORT_FILE = "report.html"


def accuracy_figure(metrics: PitfallsEvalMetrics) -> Figure:
    """Grouped bars: each model's English and target-language accuracy, per target language, with the drop."""
    scores = [s for s in metrics.scores if s.english_accuracy is not None]
    figure = Figure(figsize=(max(5.0, 1.2 * len(scores) + 2), 3.6))
    axes = figure.add_subplot()
    positions = np.arange(len(scores))
    english = [s.english_accuracy for s in scores]
    target = [s.target_accuracy for s in scores]
    axes.bar(positions - 0.2, english, 0.4, label="English", color="#4c72b0")
    axes.bar(positions + 0.2, target, 0.4, label="target language", color="#c44e52")
    for x, s in zip(positions, scores, strict=True):
        axes.annotate(f"-{s.drop:.0%}" if s.drop >= 0 else f"+{-s.drop:.0%}", (x, max(s.english_accuracy,
                      s.target_accuracy)), ha="center", va="bottom", fontsize=8, xytext=(0, 3),
                      textcoords="offset points")
    axes.set_xticks(positions, [f"{s.model}\n{s.lang}" for s in scores], fontsize=8)
    axes.set_ylim(0, 1.12)
    axes.set_ylabel("accuracy on scored pairs")
    axes.legend(loc="upper right", fontsize=8)
    axes.set_title("English vs target-language accuracy on the same pairs")
    return figure


def affinity_heatmap(ras: AffinityMatrix, title: str = "Relative Affinity Score") -> Figure:
    """D_{x,y} as a heatmap with the value in each cell: rows the evaluated language x, columns the seed language
    y; diverging colours centred on 0, darker blue = lower D = stronger affinity."""
    values = ras.values
    size = 0.55 * len(ras.languages) + 2.5
    figure = Figure(figsize=(size, size * 0.85))
    axes = figure.add_subplot()
    bound = float(np.nanmax(np.abs(values))) or 1.0
    image = axes.imshow(values, cmap="RdBu", norm=TwoSlopeNorm(0.0, -bound, bound))
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            shade = abs(values[i, j]) / bound
            axes.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize=7,
                      color="white" if shade > 0.6 else "black")
    axes.set_xticks(range(len(ras.languages)), ras.languages)
    axes.set_yticks(range(len(ras.languages)), ras.languages)
    axes.set_xlabel("seed language y")
    axes.set_ylabel("evaluated language x")
    axes.set_title(title)
    figure.colorbar(image, ax=axes, shrink=0.8, label="D (lower: stronger affinity)")
    return figure


def distance_heatmap(languages: Sequence[str], distances: np.ndarray, title: str = "Cosine distance") -> Figure:
    """The pairwise cosine distances between languages, with the value in each cell (the paper's Fig. 8)."""
    size = 0.55 * len(languages) + 2.5
    figure = Figure(figsize=(size, size * 0.85))
    axes = figure.add_subplot()
    image = axes.imshow(distances, cmap="viridis_r")
    bound = float(np.max(distances)) or 1.0
    for i in range(len(languages)):
        for j in range(len(languages)):
            axes.text(j, i, f"{distances[i, j]:.3f}", ha="center", va="center", fontsize=7,
                      color="white" if distances[i, j] / bound < 0.4 else "black")
    axes.set_xticks(range(len(languages)), languages)
    axes.set_yticks(range(len(languages)), languages)
    axes.set_title(title)
    figure.colorbar(image, ax=axes, shrink=0.8, label="1 - cosine similarity")
    return figure


def tsne_figure(points: np.ndarray, labels: Sequence[str], title: str = "t-SNE of question embeddings") -> Figure:
    """The 2-D t-SNE points coloured by language (the paper's Fig. 9)."""
    figure = Figure(figsize=(5.5, 4.5))
    axes = figure.add_subplot()
    for k, lang in enumerate(dict.fromkeys(labels)):
        chosen = np.array([label == lang for label in labels])
        axes.scatter(points[chosen, 0], points[chosen, 1], s=14, color=f"C{k % 10}", label=lang, alpha=0.8)
    axes.legend(fontsize=7, loc="best", markerscale=1.2)
    axes.set_xticks([])
    axes.set_yticks([])
    axes.set_title(title)
    return figure


def pair_table(metrics: PitfallsEvalMetrics) -> str:
    """The pair table: per model and language, the accuracies, the drop and the 2x2 counts."""
    headers = ["model", "language", "pairs", "scored", "invalid", "English acc.", "target acc.", "drop",
               "EN right / T wrong", "EN right / T right", "EN wrong / T right", "EN wrong / T wrong"]
    rows = [[s.model, s.lang, s.n_pairs, s.n_scored, s.n_invalid, s.english_accuracy, s.target_accuracy, s.drop,
             *(s.cells[cell] for cell in CELLS)] for s in metrics.scores]
    return html.table("table-pairs", "Pairs answered right in English and wrong in the target language, per model",
                      headers, rows, text_columns=2)


def pair_table_text(metrics: PitfallsEvalMetrics) -> str:
    """The pair table as Markdown (for notes and the terminal)."""
    head = ("| model | lang | pairs | scored | invalid | EN acc | T acc | drop | EN✓T✗ | EN✓T✓ | EN✗T✓ | EN✗T✗ |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for s in metrics.scores:
        numbers = [html.cell(v, 3) for v in (s.english_accuracy, s.target_accuracy, s.drop)]
        lines.append(f"| {s.model} | {s.lang} | {s.n_pairs} | {s.n_scored} | {s.n_invalid} | {' | '.join(numbers)} | "
                     + " | ".join(str(s.cells[cell]) for cell in CELLS) + " |")
    return "\n".join(lines)


def _flaw_section(metrics: PitfallsEvalMetrics) -> list[str]:
    flaws = html.table("table-flaws", f"Flawed pairs: {metrics.n_flawed} of {metrics.n_read} read, never answered "
                       "(a pair with several flaws counts under each; see invalid.jsonl)",
                       ["flaw", "meaning", "pairs"],
                       [[code, FLAWS[code], count] for code, count in metrics.flaw_counts.items()], text_columns=2)
    caps = html.table("table-cap", f"Original questions with more than k = {metrics.k} pairs", ["language",
                      "questions over the cap", "pairs from them", "most pairs from one question"],
                      [[lang, c.origins, c.pairs, c.max_pairs] for lang, c in metrics.cap_violations.items()])
    return [flaws, caps]


def write_eval_report(run: Path) -> Path:
    """report.html (and figures/) of a `crossknow pitfalls eval` run directory, from its metrics.json and
    config.yaml; returns its path."""
    run = Path(run)
    metrics = PitfallsEvalMetrics.model_validate_json((run / "metrics.json").read_text(encoding="utf-8"))
    config = PitfallsEvalConfig.upgrade(yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8")))
    weakest = max((s for s in metrics.scores if s.drop is not None), key=lambda s: s.drop, default=None)
    models = len(config["models"]["specs"])
    lead = (f"{metrics.n_usable} usable pairs of {metrics.n_read} read, answered by {models} model(s) "
            f"({metrics.answering} answering). ")
    if weakest is not None:
        lead += (f"Largest drop: {weakest.model} in {weakest.lang}, {weakest.english_accuracy:.1%} in English vs "
                 f"{weakest.target_accuracy:.1%} in the target language on the same {weakest.n_scored} pairs; "
                 f"{weakest.cells['right_wrong']} pairs right in English and wrong in the target language.")
    figure = save_figure(run, "pitfalls_accuracy", accuracy_figure(metrics), "English and target-language accuracy "
                         "per model (the paper's Fig. 3 and 5)")
    definitions = html.paragraph("Invalid answers (unparseable, not a choice, unscorable) are never counted wrong: "
                                 "a pair with one is reported and left out of both accuracies and the cells. "
                                 "Flawed pairs are never answered.")
    cost = (f"calls {metrics.calls}, cached {metrics.cached_calls}, tokens {metrics.tokens}, "
            f"${metrics.cost_usd:.4f}, {metrics.seconds:.1f} s this invocation; {metrics.pending} answers pending")
    page = html.report_page(
        "Cross-Lingual Pitfalls: evaluation", lead, [pair_table(metrics), figure, *_flaw_section(metrics)],
        [("Definitions", [definitions]), ("Run", [html.paragraph(cost), html.meta_table(config)]),
         ("metrics.json", [html.preformatted(json.dumps(metrics.model_dump(), indent=2, ensure_ascii=False))])],
    )
    path = run / REPORT_FILE
    atomic_write_text(path, page)
    return path
