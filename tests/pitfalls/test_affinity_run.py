"""`crossknow pitfalls affinity`: A_{x,y} from evaluated expanded pairs, computed by hand; and one run end to
end (scripted expansion of real seeds, the embedded model answering by loss and embedding, the report)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from crossknow.errors import CrossknowError
from crossknow.pitfalls.affinity.expansion import run_expand
from crossknow.pitfalls.affinity.expansion_records import ExpandConfig
from crossknow.pitfalls.affinity.ras import accuracy_matrix, relative_affinity
from crossknow.pitfalls.affinity.run import (
    AffinityConfig,
    accuracy_tables,
    mean_over_models,
    run_affinity,
    seed_languages,
)
from crossknow.pitfalls.eval_records import PairRow
from crossknow.pitfalls.proxy import ProxyLLM
from crossknow.report.pitfalls_affinity_report import write_affinity_report, write_expand_report
from crossknow.store.request_cache import RequestCache

from .test_expansion import FRENCH, GERMAN, ScriptedTranslator


def _row(pair_id: str, model: str, lang: str, target_correct: bool | None) -> PairRow:
    cell = None if target_correct is None else f"right_{'right' if target_correct else 'wrong'}"
    return PairRow(pair_id=pair_id, model=model, lang=lang, source=None, category=None, answer=0, en_choice=0,
                   target_choice=None if target_correct is None else (0 if target_correct else 1), en_correct=True,
                   target_correct=target_correct, cell=cell, en_error=None,
                   target_error="unparseable" if target_correct is None else None, en_raw=None, target_raw=None)


def test_accuracy_table_by_hand() -> None:
    seeds = {"a>fr": "fr", "b>fr": "fr", "c>fr": "de", "a>de": "fr", "c>de": "de"}
    rows = [
        _row("a>fr", "m1", "fr", True), _row("b>fr", "m1", "fr", False),  # fr from fr: 1/2
        _row("c>fr", "m1", "fr", True),                                     # fr from de: 1/1
        _row("a>de", "m1", "de", False),                                    # de from fr: 0/1
        _row("c>de", "m1", "de", None),                                     # invalid: not scored
        _row("a>fr", "m2", "fr", True), _row("b>fr", "m2", "fr", True),    # m2: fr from fr 2/2
    ]
    accuracy, scored = accuracy_tables(rows, seeds, ["fr", "de"], ["m1", "m2"])
    assert accuracy["m1"] == [[0.5, 1.0], [0.0, None]]
    assert scored["m1"] == [[2, 1], [1, 0]]
    assert accuracy["m2"] == [[1.0, None], [None, None]]
    # The mean over the models that have a value in the cell, each model weighing the same.
    assert mean_over_models(accuracy, 2) == [[0.75, 1.0], [0.0, None]]
    with pytest.raises(CrossknowError, match="seed_lang"):
        from crossknow.data.schemas import MCItem

        seed_languages([MCItem(id="x", lang="en", kind="question", prompt="q", options=["a", "b"], answer=0,
                               pair_id="p")])


@pytest.mark.slow
def test_affinity_end_to_end(tmp_path: Path) -> None:
    cache = RequestCache(tmp_path / "cache.sqlite")
    try:
        config = ExpandConfig(seeds=[str(FRENCH), str(GERMAN)], proxy="openai:unused", per_seed=2)
        run_expand(config, tmp_path / "expand", ProxyLLM.from_generator(ScriptedTranslator(), cache))
    finally:
        cache.close()
    assert "Seed pairs per language" in write_expand_report(tmp_path / "expand").read_text()
    out = tmp_path / "affinity"
    affinity = AffinityConfig(pairs=str(tmp_path / "expand" / "items.jsonl"), models=["default"], device="cpu",
                              embed_model="default")
    metrics = run_affinity(affinity, out)
    assert metrics.languages == ["fr", "de"]
    # A_{x,y} recomputed from pairs.parquet and the pair ids (seed file stem before ':').
    rows = pq.read_table(out / "pairs.parquet").to_pylist()
    seed_of = {"French": "fr", "German": "de"}
    for i, x in enumerate(["fr", "de"]):
        for j, y in enumerate(["fr", "de"]):
            cell = [r for r in rows if r["lang"] == x and seed_of[r["pair_id"].split(":")[0]] == y and r["cell"]]
            assert len(cell) == 2 == metrics.scored["default"][i][j]
            assert metrics.accuracy["default"][i][j] == pytest.approx(sum(r["target_correct"] for r in cell) / 2)
    # The embedded model answers all four French questions wrongly (the right option trails by at least 4.4 nats
    # of summed log-probability: no rounding can flip one), so French's mean accuracy is 0 and the RAS, which
    # divides by it, is refused with the reason (its arithmetic is checked on tables in test_affinity.py).
    assert metrics.mean_accuracy[0] == [0.0, 0.0]
    assert metrics.ras is None and metrics.ras_error == "mean accuracy 0 in fr: the RAS divides by it"
    embedding = metrics.embedding
    assert embedding is not None and embedding.languages == ["en", "fr", "de"]
    assert embedding.texts == {"en": 4, "fr": 2, "de": 2}  # the seed pairs only, both sides
    distances = np.array(embedding.distances)
    assert np.all(np.diag(distances) == 0) and np.allclose(distances, distances.T) and np.all(distances[~np.eye(3,
                                                                                                   dtype=bool)] > 0)
    page = write_affinity_report(out).read_text()
    assert "A_{x,y}" in page and "fig-pitfalls_distances" in page and "fig-pitfalls_tsne" in page
    assert json.loads((out / "affinity.json").read_text())["languages"] == ["fr", "de"]


def test_affinity_report_with_a_ras(tmp_path: Path) -> None:
    """The report renders the RAS heatmap with its numbers when affinity.json holds one."""
    import yaml

    from crossknow.pitfalls.affinity.run import AffinityMetrics
    from crossknow.pitfalls.eval_records import PitfallsEvalMetrics

    mean = [[0.2, 0.6], [0.5, 0.3]]
    ras = relative_affinity(accuracy_matrix({("fr", "fr"): 0.2, ("fr", "de"): 0.6, ("de", "fr"): 0.5,
                                             ("de", "de"): 0.3}, ["fr", "de"]))
    # By hand: row means fr 0.4, de 0.4; D = (A - 0.4) / 0.4 * exp(-|0.4 - 0.4|)
    np.testing.assert_allclose(ras.values, [[-0.5, 0.5], [0.25, -0.25]])
    metrics = AffinityMetrics(languages=["fr", "de"], models=["m"], accuracy={"m": mean},
                              scored={"m": [[5, 5], [5, 5]]}, mean_accuracy=mean, c=-1.0,
                              ras=ras.values.tolist(), ras_error=None, embedding=None)
    (tmp_path / "affinity.json").write_text(metrics.model_dump_json())
    (tmp_path / "metrics.json").write_text(PitfallsEvalMetrics(
        scores=[], answering="loss", n_read=20, n_usable=20, n_flawed=0, flaw_counts={}, k=3, cap_violations={},
        templates={}, pending=0, calls=0, cached_calls=0, tokens=0, cost_usd=0.0, seconds=1.0).model_dump_json())
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"pairs": "items.jsonl"}))
    page = write_affinity_report(tmp_path).read_text()
    assert "fig-pitfalls_ras" in page and "Relative Affinity Score of the expanded pairs" in page
    assert (tmp_path / "figures" / "pitfalls_ras.png").stat().st_size > 1000
    assert "<td>0.200</td><td>0.600</td>" in page  # the A_{x,y} table
