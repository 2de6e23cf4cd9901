"""The beam search with scripted simulators (V = the sum of the perturbation weights / 100, see
scripted.py) and a scripted transformation: every expected beam, depth and inclusion below is worked
out by hand from the script."""

from __future__ import annotations

import dataclasses
import json

import pytest

from crossknow.pitfalls.candidates import CandidateList, CandidateRecord, QuestionSide
from crossknow.pitfalls.probe.constraints import EnglishAccuracy
from crossknow.pitfalls.probe.objective import SimulationObjective
from crossknow.pitfalls.probe.recipes import get_recipe
from crossknow.pitfalls.probe.search import BeamSearch, BeamSettings
from crossknow.pitfalls.simulate import SimAnswer

from .scripted import ScriptedSimulator, ScriptedTransformation, root, scripted_simulators


def make_search(tmp_path, script, **settings):
    settings = BeamSettings(**{"potential": 0.99, "inclusion": 0.99, **settings})
    transformation = ScriptedTransformation(script)
    candidates = CandidateList(cap=settings.cap)
    objective = SimulationObjective(scripted_simulators())
    search = BeamSearch(settings, transformation, objective, [EnglishAccuracy(0.2)], candidates, "test")
    return search, transformation


def paths(transformation, ids):
    return [transformation.paths[i] for i in ids]


DEPTH1 = {
    "s0": (5, 30, 10), "s1": (20, 1, 2), "s2": (25, 3, 4), "s3": (15, 6, 7),
}


def beam_script(source_id, path):
    if len(path) == 1:
        return DEPTH1[source_id][path[0] - 1]
    return path[-1] + (20 if source_id == "s3" else 0)


def test_the_beam_keeps_the_w_best_pairs_at_each_depth(tmp_path):
    search, transformation = make_search(tmp_path, beam_script, width=5, depth=2, extended_depth=2)
    levels = search.run_batch([root(i) for i in range(4)])
    assert [level.depth for level in levels] == [0, 1, 2]
    assert levels[1].scored == 12
    # depth 1: the five highest weights of the script, 30 25 20 15 10
    assert paths(transformation, levels[1].beam) == [
        ("s0", (2,)), ("s2", (1,)), ("s1", (1,)), ("s3", (1,)), ("s0", (3,)),
    ]
    assert transformation.expanded[1] == levels[1].beam  # exactly the beam is expanded
    # depth 2: s3's children 15+20+k = 36..38, then s0/(2,)'s 30+k = 33, 32 (s2/(1,): 26..28)
    assert paths(transformation, levels[2].beam) == [
        ("s3", (1, 3)), ("s3", (1, 2)), ("s3", (1, 1)), ("s0", (2, 3)), ("s0", (2, 2)),
    ]
    assert levels[2].max_value == pytest.approx(0.38)
    assert len(search.candidates) == 0


@pytest.mark.parametrize(
    ("first", "second", "depths"),
    [
        (59, 0, [0, 1]),  # 0.59 < θ_pot: stop at d1 = 1
        (60, 0, [0, 1, 2, 3]),  # 0.60 >= θ_pot: go on to d2 = 3
        (61, 0, [0, 1, 2, 3]),  # above the threshold: the same extension
    ],
)
def test_the_depth_extends_exactly_when_max_v_reaches_the_potential_threshold(tmp_path, first, second, depths):
    script = lambda _, path: first if len(path) == 1 else second  # noqa: E731
    search, _ = make_search(tmp_path, script, depth=1, extended_depth=3, potential=0.6)
    levels = search.run_batch([root(0)])
    assert [level.depth for level in levels] == depths
    assert levels[-1].depth_limit == depths[-1]


def test_a_later_level_can_extend_the_depth(tmp_path):
    script = lambda _, path: {1: 10, 2: 50}.get(len(path), 0)  # noqa: E731  V = 0.10, then 0.60 at depth 2
    search, _ = make_search(tmp_path, script, depth=2, extended_depth=4, potential=0.6)
    levels = search.run_batch([root(0)])
    assert [(level.depth, level.depth_limit) for level in levels] == [(0, 2), (1, 2), (2, 4), (3, 4), (4, 4)]


def test_a_pair_above_the_inclusion_threshold_enters_the_list_and_leaves_the_search(tmp_path):
    script = lambda _, path: {(1,): 81, (2,): 80}.get(path, 0 if len(path) > 1 else None)  # noqa: E731
    search, transformation = make_search(tmp_path, script, depth=2, extended_depth=2, inclusion=0.8)
    levels = search.run_batch([root(0)])
    [record] = search.candidates.records()
    assert transformation.paths[record.id] == ("s0", (1,))
    assert record.value == pytest.approx(0.81)
    assert sum(record.beta_en.values()) == 100 and sum(record.beta_target.values()) == 19  # 81 of 100 wrong
    assert levels[1].included == [record.id]
    # V = 0.80 does not exceed θ_inc = 0.8: it stays in the beam; 0.81 left it
    assert paths(transformation, levels[1].beam) == [("s0", (2,))]
    assert paths(transformation, transformation.expanded[1]) == [("s0", (2,))]


def test_with_the_papers_k_and_gamma_v_of_exactly_theta_inc_does_not_qualify(tmp_path):
    """Section 2.4: a pair is included "if its simulation score exceeds" θ_inc. With K = 5 simulators and γ = 2,
    V = 1² − 1/5 = 0.8 exactly (all five right in English, four wrong in the target) is reachable; it does not
    exceed 0.8. Five wrong in the target, V = 1, does."""
    settings = dataclasses.replace(get_recipe("paper").settings, depth=1, extended_depth=1)
    transformation = ScriptedTransformation(lambda source_id, path: {"s0": 4, "s1": 5}[source_id] if path == (1,)
                                            else None)
    candidates = CandidateList(cap=settings.cap)
    objective = RecordingObjective([ScriptedSimulator(j) for j in range(5)], gamma=2.0)
    search = BeamSearch(settings, transformation, objective, [EnglishAccuracy(0.2)], candidates, "paper")
    levels = search.run_batch([root(0), root(1)])
    values = {transformation.paths[node_id][0]: value for node_id, value in objective.values.items()
              if node_id in transformation.paths}
    assert values == {"s0": 0.8, "s1": 1.0}  # exactly, as floats
    assert [transformation.paths[r.id] for r in candidates.records()] == [("s1", (1,))]
    assert paths(transformation, levels[1].beam) == [("s0", (1,))]


class RecordingObjective(SimulationObjective):
    """The objective, keeping each scored pair's V by id."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.values = {}

    def score(self, nodes):
        simulations = super().score(nodes)
        self.values.update({node.id: sim.value for node, sim in zip(nodes, simulations, strict=True)})
        return simulations


CAP_SCRIPT = {("s0", (1,)): 95, ("s0", (2,)): 90, ("s0", (3,)): 85, ("s0", (4,)): 81}


def cap_script(source_id, path):
    return CAP_SCRIPT.get((source_id, path), 1)


def test_once_k_pairs_of_a_question_are_listed_its_descendants_are_dropped(tmp_path):
    search, transformation = make_search(tmp_path, cap_script, depth=2, extended_depth=2, inclusion=0.8)
    search.run_batch([root(0, choices=5), root(1)])
    records = search.candidates.records()
    # the three best of s0's four qualifying children, best first; the fourth is dropped
    assert [transformation.paths[r.id] for r in records] == [("s0", (1,)), ("s0", (2,)), ("s0", (3,))]
    assert search.stats.dropped_by_cap == 1
    assert all(transformation.paths[i][0] == "s1" for i in transformation.expanded[1])


def test_pairs_already_listed_count_once_and_fill_the_cap(tmp_path):
    first, _ = make_search(tmp_path, cap_script, depth=2, extended_depth=2, inclusion=0.8)
    first.run_batch([root(0, choices=5), root(1)])
    whole = first.candidates.records()
    assert len(whole) == 3
    # a list given the first two pairs: the search finds them again and adds only the third
    settings = BeamSettings(potential=0.99, inclusion=0.8, depth=2, extended_depth=2)
    listed = CandidateList(whole[:2], settings.cap)
    resumed = BeamSearch(settings, ScriptedTransformation(cap_script), SimulationObjective(scripted_simulators()),
                         [EnglishAccuracy(0.2)], listed, "test")
    resumed.run_batch([root(0, choices=5), root(1)])
    assert listed.records() == whole and listed.new() == whole[2:]  # the same three pairs, none twice
    # a list given all three drops s0 at its root
    again, transformation = make_search(tmp_path, cap_script, depth=2, extended_depth=2, inclusion=0.8)
    again.candidates = CandidateList(whole, 3)
    again.run_batch([root(0, choices=5), root(1)])
    assert len(again.candidates) == 3 and again.stats.dropped_by_cap == 1 and not again.candidates.new()
    assert not any(p[0] == "s0" for p in transformation.paths.values())


def test_a_list_settled_without_its_new_pairs_forgets_them():
    listed = CandidateList([candidate("a", "s0")], cap=2)
    assert listed.add(candidate("b", "s0")) and listed.full("s0") and not listed.add(candidate("c", "s0"))
    listed.settle(keep=False)
    assert [r.id for r in listed.records()] == ["a"] and "b" not in listed and not listed.full("s0")
    assert listed.add(candidate("c", "s0")) and [r.id for r in listed.new()] == ["c"]
    listed.settle(keep=True)
    assert not listed.new() and len(listed) == 2


def candidate(pair_id, source_id):
    side = QuestionSide(question="Q?", choices=["a", "b"], answer=0, lang="en")
    return CandidateRecord(id=pair_id, source_id=source_id, recipe="test", english=side,
                           target=side.model_copy(update={"lang": "fr"}), value=1.0, beta_en={}, beta_target={},
                           depth=0, parent_id=None, lineage=[])


def test_children_that_repeat_a_pair_are_dropped_and_lineage_is_kept(tmp_path):
    def script(_, path):
        if len(path) == 1:
            return "<9:10>"  # the same text from every option: one child, two duplicates
        return 80 if path[-1] == 2 else 0

    search, transformation = make_search(tmp_path, script, depth=2, extended_depth=2, inclusion=0.8)
    levels = search.run_batch([root(0)])
    assert levels[1].scored == 1 and search.stats.duplicates == 2
    [record] = search.candidates.records()
    parent_id = levels[1].beam[0]
    assert record.depth == 2 and record.parent_id == parent_id
    assert [step.perturbation_en for step in record.lineage] == ["<9:10>", "<2:80>"]
    assert [step.depth for step in record.lineage] == [1, 2]
    assert record.lineage[0].parent_id == root(0).id and record.lineage[1].parent_id == parent_id
    assert record.english.question == "Question 0? <9:10> <2:80>"
    assert record.target.question == "[fr] Question 0? <9:10> <2:80>"
    assert record.value == pytest.approx(0.9)
    saved = json.loads(search.candidates.export(tmp_path / "candidates.jsonl").read_text(encoding="utf-8"))
    assert saved["lineage"][1]["wrong_option"] == 2


def test_pairs_that_break_the_english_constraint_leave_the_search(tmp_path):
    # <E:30>: 30 of 100 simulators answer English wrong: mean 0.7 < 1 - 0.2
    script = lambda _, path: {(1,): "<E:30> <1:90>", (2,): "<E:20> <2:50>"}.get(path)  # noqa: E731
    search, transformation = make_search(tmp_path, script, depth=1, extended_depth=1, inclusion=0.8)
    levels = search.run_batch([root(0)])
    assert len(search.candidates) == 0
    assert search.stats.rejected["english accuracy"] == 1
    assert paths(transformation, levels[1].beam) == [("s0", (2,))]


class InvalidOnMarker:
    """Answers right, except that every answer to a question holding '<bad>' is invalid."""

    name = "invalid-on-marker"

    def answer(self, questions, resimulation=0):
        return [SimAnswer(None if "<bad>" in q.question else q.answer, None, "unparseable") for q in questions]


def test_a_pair_whose_simulation_stays_invalid_is_counted_and_left_out(tmp_path):
    script = lambda _, path: {(1,): "<bad>", (2,): "<2:5>"}.get(path)  # noqa: E731
    transformation = ScriptedTransformation(script)
    candidates = CandidateList(cap=3)
    objective = SimulationObjective([*scripted_simulators(), InvalidOnMarker()], max_resimulations=1)
    search = BeamSearch(BeamSettings(depth=1, extended_depth=1), transformation, objective, [], candidates, "test")
    levels = search.run_batch([root(0)])
    assert search.stats.unscored == 1 and levels[1].scored == 1
    assert paths(transformation, levels[1].beam) == [("s0", (2,))]
    assert objective.meter.resimulated == 2  # both sides of the '<bad>' pair asked once more
