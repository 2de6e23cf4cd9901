"""Constraints: English accuracy at its bound, chrF against a hand computation and sacrebleu, and the
semantic constraint comparing the original question with the perturbed one."""

from __future__ import annotations

import pytest

from crossknow.pitfalls.pairs import Perturbation, child_node
from crossknow.pitfalls.probe.constraints import ChrF, EnglishAccuracy, SemanticSimilarity, violations
from crossknow.pitfalls.probe.objective import Simulation

from .scripted import root


def simulation(mean_en):
    return Simulation({"a": mean_en}, {"a": 0.0}, mean_en**2, 0)


def test_english_accuracy_holds_at_one_minus_epsilon_and_fails_below():
    nodes = [root(0)] * 3
    reasons = EnglishAccuracy(0.2).check(nodes, [simulation(0.8), simulation(0.79), simulation(1.0)])
    assert reasons[0] is None and reasons[2] is None
    assert reasons[1].startswith("english accuracy: 0.790")


def test_chrf_by_hand():
    # 'abc' vs 'abcd': orders 1-3 have n-grams in both; precision 3/4, 2/3, 1/2 (mean 23/36), recall 1;
    # F_2 = 5 P R / (4 P + R) = 115/128
    assert ChrF().score("abc", "abcd") == pytest.approx(115 / 128)
    assert ChrF().score("a b c", "abc") == pytest.approx(1.0)  # whitespace is removed
    assert ChrF().score("abc", "xyz") == 0.0


def test_chrf_equals_sacrebleu():
    sacrebleu = pytest.importorskip("sacrebleu")
    pairs = [
        ("What functions in removing phosphorylated amino acids from proteins?",
         "Enzymes are everywhere. What functions in removing phosphorylated amino acids from proteins?"),
        ("I needed to send a piece of mail, where did I go?", "Where would I post a letter?"),
    ]
    for reference, candidate in pairs:
        expected = sacrebleu.sentence_chrf(candidate, [reference]).score / 100
        assert ChrF().score(reference, candidate) == pytest.approx(expected)


def test_semantic_similarity_compares_the_original_question_with_the_perturbed_one():
    parent = child_node(root(0), Perturbation("", "a long distraction", "", "une distraction", 1))
    grandchild = child_node(parent, Perturbation("", "more", "", "plus", 2))
    seen = []

    class Recording:
        name = "rec"

        def similarity(self, pairs):
            seen.extend(pairs)
            return [0.5 for _ in pairs]

    reasons = SemanticSimilarity(Recording(), 0.5, "original").check([grandchild], None)
    assert reasons == [None]
    assert seen == [("Question 0?", "Question 0? a long distraction more")]
    reasons = SemanticSimilarity(Recording(), 0.6, "cross").check([grandchild], None)
    assert seen[-1] == ("Question 0? a long distraction more", "[fr] Question 0? une distraction plus")
    assert reasons[0] == "rec_cross>=0.6: S = 0.500"


def test_violations_name_the_first_broken_constraint():
    short, long = root(0), child_node(root(0), Perturbation("", "x " * 200, "", "y", 1))
    chrf = SemanticSimilarity(ChrF(), 0.5, "original")
    reasons = violations([chrf], [short, long], None)
    assert reasons[0] is None and reasons[1].startswith("chrf_original>=0.5: S = ")
