"""`crossknow pitfalls affinity`: the accuracy table A_{x,y} of expanded pairs (Fig. 6), the Relative
Affinity Score (Fig. 7) and, on request, the embedding analysis of the seed pairs (Fig. 8 and 9).

The pairs are evaluated by `run_pitfalls_eval` into the same run directory; the RAS is computed from the mean
of the models' tables (Fig. 7 averages six models). affinity.json holds every matrix, embeddings.npz the vectors.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from pydantic import Field

from crossknow.data.hub_data import data_file
from crossknow.data.jsonl import read_jsonl
from crossknow.data.schemas import MCItem, Record
from crossknow.errors import CrossknowError
from crossknow.pitfalls.affinity.ras import RAS_CONSTANT, accuracy_matrix, relative_affinity
from crossknow.pitfalls.eval_records import PairRow, PitfallsEvalConfig
from crossknow.pitfalls.evaluation import Progress, run_pitfalls_eval
from crossknow.store.atomic import atomic_write, atomic_write_json

AFFINITY_FILE = "affinity.json"
EMBEDDINGS_FILE = "embeddings.npz"


class AffinityConfig(PitfallsEvalConfig):
    """An evaluation of expanded pairs, with the RAS constant and the optional embedding analysis."""

    c: float = Field(default=RAS_CONSTANT, lt=0, description="The RAS constant c (the paper's -1).")
    embed_model: str | None = Field(default=None, description="Local model (default, hf:PATH, gguf:FILE) whose "
                                    "mean-pooled last-layer hidden states embed the seed pairs (Fig. 8, 9); "
                                    "unset: no embedding analysis.")
    tsne_seed: int = Field(default=0, description="Seed of the t-SNE projection.")


class EmbeddingAnalysis(Record):
    """The seed pairs' embeddings: distances between languages (Fig. 8)."""

    model: str = Field(description="The embedding model's spec.")
    languages: list[str] = Field(description="Rows and columns of `distances` ('en' = the English questions).")
    texts: dict[str, int] = Field(description="Questions embedded per language.")
    distances: list[list[float]] = Field(description="Cosine distance between the languages' mean normalised "
                                         "embeddings (crossknow.pitfalls.affinity.embeddings.language_distances).")


class AffinityMetrics(Record):
    """affinity.json: the accuracy tables, the RAS and the embedding analysis."""

    languages: list[str] = Field(description="Rows (evaluated language x) and columns (seed language y).")
    models: list[str] = Field(description="The models evaluated.")
    accuracy: dict[str, list[list[float | None]]] = Field(description="Per model, A_{x,y}: target-language "
                                                          "accuracy; null where no pair was scored.")
    scored: dict[str, list[list[int]]] = Field(description="Per model, the scored pairs behind each A_{x,y}.")
    mean_accuracy: list[list[float | None]] = Field(description="The mean of the models' A_{x,y} (null where no "
                                                    "model scored a pair): the table the RAS uses.")
    c: float = Field(description="The RAS constant.")
    ras: list[list[float]] | None = Field(description="D_{x,y} of mean_accuracy; null when it cannot be computed.")
    ras_error: str | None = Field(description="Why the RAS was not computed; null when it was.")
    embedding: EmbeddingAnalysis | None = Field(description="The embedding analysis; null when not asked.")


def seed_languages(items: Sequence[MCItem]) -> dict[str, str]:
    """pair_id -> seed language, from the items' `seed_lang` metadata; an error for a pair without it."""
    seeds: dict[str, str] = {}
    for item in items:
        if item.pair_id is None or "seed_lang" not in item.metadata:
            raise CrossknowError(f"item {item.id!r} has no seed_lang: affinity needs `crossknow pitfalls expand` items")
        seeds[item.pair_id] = str(item.metadata["seed_lang"])
    return seeds


def accuracy_tables(
    rows: Sequence[PairRow], seeds: dict[str, str], languages: Sequence[str], models: Sequence[str]
) -> tuple[dict[str, list[list[float | None]]], dict[str, list[list[int]]]]:
    """(accuracy, scored) per model: A_{x,y} (None where nothing was scored) and the scored pair counts."""
    right: dict[tuple[str, str, str], int] = defaultdict(int)
    count: dict[tuple[str, str, str], int] = defaultdict(int)
    for row in rows:
        if row.cell is not None:
            key = (row.model, row.lang, seeds[row.pair_id])
            count[key] += 1
            right[key] += bool(row.target_correct)
    accuracy = {m: [[right[(m, x, y)] / count[(m, x, y)] if count[(m, x, y)] else None for y in languages]
                    for x in languages] for m in models}
    scored = {m: [[count[(m, x, y)] for y in languages] for x in languages] for m in models}
    return accuracy, scored


def mean_over_models(accuracy: dict[str, list[list[float | None]]], size: int) -> list[list[float | None]]:
    """Cell-wise mean of the models' tables over the models with a value there."""
    mean: list[list[float | None]] = []
    for i in range(size):
        mean.append([])
        for j in range(size):
            values = [table[i][j] for table in accuracy.values() if table[i][j] is not None]
            mean[i].append(sum(values) / len(values) if values else None)
    return mean


def run_affinity(config: AffinityConfig, out: Path, on_progress: Progress | None = None) -> AffinityMetrics:
    """Evaluate the expanded pairs, then write affinity.json (and embeddings.npz); see the module docstring."""
    items = [item for item in read_jsonl(data_file(config.pairs)).items if isinstance(item, MCItem)]
    seeds = seed_languages(items)
    languages = list(dict.fromkeys(seeds.values()))
    run_pitfalls_eval(config, out, on_progress=on_progress)
    rows = [PairRow.model_validate(row) for row in pq.read_table(out / "pairs.parquet").to_pylist()]
    accuracy, scored = accuracy_tables(rows, seeds, languages, config.models.specs)
    mean = mean_over_models(accuracy, len(languages))
    missing = [f"{x}/{y}" for i, x in enumerate(languages) for j, y in enumerate(languages) if mean[i][j] is None]
    ras, ras_error = None, None
    if missing:
        ras_error = f"no scored pair in {len(missing)} (language/seed) cells, e.g. {', '.join(missing[:5])}"
    else:
        try:
            table = accuracy_matrix({(x, y): mean[i][j] for i, x in enumerate(languages)
                                     for j, y in enumerate(languages)}, languages)
            ras = relative_affinity(table, config.c).values.tolist()
        except CrossknowError as error:
            ras_error = str(error)
    embedding = _embed(config, items, out) if config.embed_model else None
    metrics = AffinityMetrics(languages=languages, models=list(config.models.specs), accuracy=accuracy, scored=scored,
                              mean_accuracy=mean, c=config.c, ras=ras, ras_error=ras_error, embedding=embedding)
    atomic_write_json(out / AFFINITY_FILE, metrics.model_dump())
    return metrics


def _embed(config: AffinityConfig, items: Sequence[MCItem], out: Path) -> EmbeddingAnalysis:
    """Embed the seed pairs (x = y) in their language and in English; write embeddings.npz."""
    from crossknow.pitfalls.affinity.embeddings import language_distances, load_embedder, mean_pooled, tsne_projection

    texts: dict[str, list[str]] = defaultdict(list)
    for item in items:
        seed_lang = item.metadata["seed_lang"]
        if item.pair_id == f"{item.metadata['seed_id']}>{seed_lang}":
            texts[item.lang].append(item.prompt)
    tokenizer, model = load_embedder(str(config.embed_model), config.models.device, config.models.dtype)
    vectors = {lang: mean_pooled(tokenizer, model, questions, config.batch_size) for lang, questions in texts.items()}
    languages, distances = language_distances(vectors)
    stacked = np.concatenate([vectors[lang] for lang in languages])
    labels = np.array([lang for lang in languages for _ in vectors[lang]])
    points = tsne_projection(stacked, config.tsne_seed)
    atomic_write(out / EMBEDDINGS_FILE, lambda handle: np.savez(handle, vectors=stacked, labels=labels,
                                                                   tsne=points), binary=True)
    return EmbeddingAnalysis(model=str(config.embed_model), languages=languages,
                             texts={lang: len(v) for lang, v in vectors.items()}, distances=distances.tolist())
