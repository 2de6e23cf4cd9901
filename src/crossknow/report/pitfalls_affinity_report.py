"""The reports of `crossknow pitfalls expand` and `crossknow pitfalls affinity` (report.html of the run).

- expand: seed pairs read, flawed and sampled per language, expanded pairs made per language, drops by reason.
- affinity: the mean accuracy table A_{x,y} (the paper's Fig. 6 as a table), the RAS heatmap (Fig. 7), each
  model's table, the embedding distances (Fig. 8) and the t-SNE projection (Fig. 9) when asked, and the
  evaluation's pair table.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import yaml

from crossknow.pitfalls.affinity.expansion_records import ExpandMetrics
from crossknow.pitfalls.affinity.ras import AffinityMatrix
from crossknow.pitfalls.affinity.run import AFFINITY_FILE, EMBEDDINGS_FILE, AffinityMetrics
from crossknow.pitfalls.eval_records import PitfallsEvalMetrics
from crossknow.report import html
from crossknow.report.figures import save_figure
from crossknow.report.pitfalls_figures import REPORT_FILE, affinity_heatmap, distance_heatmap, pair_table, tsne_figure
from crossknow.store.atomic import atomic_write_text


def _config(run: Path) -> dict:
    return yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))


def write_expand_report(run: Path) -> Path:
    """report.html of a `crossknow pitfalls expand` run directory, from metrics.json; returns its path."""
    run = Path(run)
    metrics = ExpandMetrics.model_validate_json((run / "metrics.json").read_text(encoding="utf-8"))
    made, dropped = sum(metrics.made.values()), sum(metrics.dropped.values())
    lead = (f"{sum(metrics.seeds_sampled.values())} seed pairs from {len(metrics.languages)} languages expanded into "
            f"each other: {made} expanded pairs made, {dropped} translations dropped after retries, "
            f"{metrics.pending} left for a later run.")
    seeds = html.table("table-seeds", "Seed pairs per language", ["language", "read", "flawed (invalid.jsonl)",
                       "sampled", "expanded pairs in this language"],
                       [[lang, metrics.seeds_read[lang], metrics.seeds_flawed[lang], metrics.seeds_sampled[lang],
                         metrics.made[lang]] for lang in metrics.languages], text_columns=1)
    drops = html.table("table-drops", "Translations dropped, by reason", ["reason", "translations"],
                       sorted(metrics.dropped.items()), text_columns=1)
    cost = (f"calls {metrics.calls}, cached {metrics.cached_calls}, tokens {metrics.tokens}, "
            f"${metrics.cost_usd:.4f}, {metrics.seconds:.1f} s this invocation")
    page = html.report_page("Cross-Lingual Pitfalls: expansion", lead, [seeds, drops],
                            [("Run", [html.paragraph(cost), html.meta_table(_config(run))]),
                             ("metrics.json", [html.preformatted(json.dumps(metrics.model_dump(), indent=2))])])
    path = run / REPORT_FILE
    atomic_write_text(path, page)
    return path


def _matrix_table(table_id: str, caption: str, languages: list[str], values: list[list], digits: int = 3) -> str:
    rows = [[x, *(html.cell(v, digits) for v in row)] for x, row in zip(languages, values, strict=True)]
    return html.table(table_id, caption, ["x \\ seed y", *languages], rows, text_columns=1)


def write_affinity_report(run: Path) -> Path:
    """report.html of a `crossknow pitfalls affinity` run directory; returns its path."""
    run = Path(run)
    metrics = AffinityMetrics.model_validate_json((run / AFFINITY_FILE).read_text(encoding="utf-8"))
    evaluation = PitfallsEvalMetrics.model_validate_json((run / "metrics.json").read_text(encoding="utf-8"))
    findings = [_matrix_table("table-accuracy", "A_{x,y}: accuracy in language x on pairs expanded from seed "
                              f"language y, mean over {len(metrics.models)} model(s) (the paper's Fig. 6)",
                              metrics.languages, metrics.mean_accuracy)]
    if metrics.ras is not None:
        ras = AffinityMatrix(tuple(metrics.languages), np.array(metrics.ras))
        findings.append(save_figure(run, "pitfalls_ras", affinity_heatmap(ras), f"Relative Affinity Score D_{{x,y}}, "
                                    f"c = {metrics.c:g}; lower = stronger affinity (the paper's Fig. 7)"))
        lead = "Relative Affinity Score of the expanded pairs (lower: pairs from seed y keep more weakness in x)."
    else:
        lead = f"The RAS could not be computed: {metrics.ras_error}."
    if metrics.embedding is not None:
        embedding = metrics.embedding
        findings.append(save_figure(run, "pitfalls_distances", distance_heatmap(
            embedding.languages, np.array(embedding.distances)), f"Cosine distances between the languages' mean "
            f"normalised embeddings of the seed pairs, {embedding.model} (the paper's Fig. 8)"))
        with np.load(run / EMBEDDINGS_FILE) as saved:
            findings.append(save_figure(run, "pitfalls_tsne", tsne_figure(saved["tsne"], list(saved["labels"])),
                                        f"t-SNE of the seed pairs' embeddings, {embedding.model} (the paper's Fig. 9)"))
    per_model = [_matrix_table(f"table-accuracy-{k}", f"A_{{x,y}} of {model}", metrics.languages,
                               metrics.accuracy[model]) for k, model in enumerate(metrics.models)]
    page = html.report_page(
        "Cross-Lingual Pitfalls: language affinity", lead, findings,
        [("Per model", per_model), ("Evaluation", [pair_table(evaluation)]),
         ("Run", [html.meta_table(_config(run))]),
         ("affinity.json", [html.preformatted(json.dumps(metrics.model_dump(), indent=2))])])
    path = run / REPORT_FILE
    atomic_write_text(path, page)
    return path
