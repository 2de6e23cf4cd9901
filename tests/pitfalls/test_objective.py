"""V over K simulators on hand-computed β values, and invalid answers re-simulated, never counted wrong."""

from __future__ import annotations

import pytest

from crossknow.errors import CrossknowError
from crossknow.generation.structured import StructuredClient
from crossknow.models.generator import GenerateResult, Usage
from crossknow.pitfalls.probe.objective import SimulationObjective, simulation_score
from crossknow.pitfalls.simulate import GenerativeSimulator, SimAnswer, draw_index
from crossknow.store.request_cache import RequestCache

from .scripted import root


class Listed:
    """Answers from a list per side ('en'/'fr'): True = right, False = wrong, None = invalid; each call
    takes the next entry of that side's list, so a re-simulation gets the following one."""

    def __init__(self, name, en, fr):
        self.name = name
        self.script = {"en": list(en), "fr": list(fr)}
        self.asked = 0

    def answer(self, questions, resimulation=0):
        self.asked += len(questions)
        answers = []
        for q in questions:
            right = self.script[q.lang].pop(0)
            choice = None if right is None else (q.answer if right else (q.answer + 1) % len(q.choices))
            answers.append(SimAnswer(choice, None, "unparseable" if right is None else None))
        return answers


def test_v_is_the_squared_mean_english_accuracy_minus_the_mean_target_accuracy():
    # β^E = (1, 1, 0): mean 2/3; β^T = (0, 1, 0): mean 1/3; V = 4/9 − 1/3 = 1/9
    sims = [Listed("a", [True], [False]), Listed("b", [True], [True]), Listed("c", [False], [False])]
    [simulation] = SimulationObjective(sims).score([root(0)])
    assert simulation.beta_en == {"a": 1.0, "b": 1.0, "c": 0.0}
    assert simulation.beta_target == {"a": 0.0, "b": 1.0, "c": 0.0}
    assert simulation.value == pytest.approx(1 / 9)
    assert simulation_score([1, 1, 1, 1, 1], [0, 0, 0, 0, 1]) == pytest.approx(0.8)  # the paper's θ_inc case
    assert simulation_score([0.5], [0.0], gamma=3) == pytest.approx(0.125)


def test_beta_is_each_simulators_accuracy_over_its_samples():
    # two samples a side: a is right 2/2 in English, 1/2 in French; b 1/2 and 0/2
    sims = [Listed("a", [True, True], [True, False]), Listed("b", [True, False], [False, False])]
    [simulation] = SimulationObjective(sims, samples=2).score([root(0)])
    assert simulation.beta_en == {"a": 1.0, "b": 0.5} and simulation.beta_target == {"a": 0.5, "b": 0.0}
    assert simulation.value == pytest.approx(0.75**2 - 0.25)


def test_an_invalid_answer_is_resimulated_and_the_pair_scored_on_k_answers():
    # b's first English answer is invalid; asked again, it is right: V over both simulators
    a, b = Listed("a", [True], [False]), Listed("b", [None, True], [False])
    objective = SimulationObjective([a, b])
    [simulation] = objective.score([root(0)])
    assert simulation.value == pytest.approx(1.0) and simulation.invalid_answers == 1
    assert b.asked == 3 and objective.meter.resimulated == 1 and objective.meter.questions == 5


def test_a_pair_still_invalid_after_resimulation_is_unscored_not_wrong():
    a, b = Listed("a", [True], [False]), Listed("b", [None, None, None], [False])
    objective = SimulationObjective([a, b], max_resimulations=2)
    [simulation] = objective.score([root(0)])
    assert simulation.value is None and simulation.invalid_answers == 3
    assert "b: unparseable" in simulation.error and "2 re-simulations" in simulation.error
    assert objective.meter.unscored_pairs == 1


class ValidFromSeed:
    """A Generator whose output is the right answer to the scripted pairs ('option 0') when the request's
    seed is at least `first_valid`, and an invalid one (no final answer) below it."""

    name = "seeded"
    model_id = "m"

    def __init__(self, first_valid: int):
        self.first_valid = first_valid
        self.seeds: list[int] = []

    def generate(self, requests):
        self.seeds.extend(request.seed for request in requests)
        return [GenerateResult('{"final_answer": "option 0"}' if request.seed >= self.first_valid else "no idea",
                               self.name, self.model_id, Usage(7, 3)) for request in requests]


def test_a_resimulation_asks_the_generative_model_again_with_new_seeds(tmp_path):
    # the client makes up to 3 calls a question: seeds 0, 1, 2 on the first asking, all invalid; the
    # re-simulation asks from seed 0 + 1 * 3 = 3, a request the cache has not seen, and gets a valid answer
    generator = ValidFromSeed(3)
    cache = RequestCache(tmp_path / "requests.sqlite")
    simulator = GenerativeSimulator("g", StructuredClient(generator, cache, max_attempts=3, temperature=0.001))
    objective = SimulationObjective([simulator], max_resimulations=1)
    [simulation] = objective.score([root(0)])
    assert simulation.value == 0.0 and simulation.invalid_answers == 2  # right on both sides: V = 1² − 1
    assert generator.seeds == [0, 0, 1, 1, 2, 2, 3, 3]  # both sides, three attempts, then the re-simulation
    assert objective.meter.resimulated == 2 and simulator.client.meter.calls == 8
    # a rerun asks with the same seeds: everything replays from the cache, nothing reaches the model
    rerun = GenerativeSimulator("g", StructuredClient(generator, cache, max_attempts=3, temperature=0.001))
    [again] = SimulationObjective([rerun], max_resimulations=1).score([root(0)])
    assert again == simulation and rerun.client.meter.calls == 0 and len(generator.seeds) == 8
    # re-simulation 2 asks from seed 0 + 2 * 3 = 6; the answer records the seed of its call
    [answer] = simulator.answer([root(0).english], resimulation=2)
    assert (answer.choice, answer.seed, generator.seeds[-1]) == (0, 6, 6)
    cache.close()


def test_a_pair_invalid_on_both_sides_gives_its_reason_once():
    a, b = Listed("a", [True], [False]), Listed("b", [None, None], [None, None])
    [simulation] = SimulationObjective([a, b], max_resimulations=1).score([root(0)])
    assert simulation.error == "no valid answer after 1 re-simulations (b: unparseable)"


def test_simulator_names_must_be_unique():
    with pytest.raises(CrossknowError, match="unique"):
        SimulationObjective([Listed("a", [], []), Listed("a", [], [])])


class RightBelowSeed:
    """A Generator that answers 'option 0' (right for the scripted pairs) at seeds below `limit` and
    'option 1' (wrong) from it on."""

    name = "seeded"
    model_id = "m"

    def __init__(self, limit: int):
        self.limit = limit
        self.seeds: list[int] = []

    def generate(self, requests):
        self.seeds.extend(request.seed for request in requests)
        return [GenerateResult(f'{{"final_answer": "option {int(request.seed >= self.limit)}"}}', self.name,
                               self.model_id, Usage(7, 3)) for request in requests]


def test_each_sample_of_a_question_is_asked_with_its_own_seed(tmp_path):
    # 2 samples, 3 attempts a question: sample 0 asks from seed 0, sample 1 from seed 0 + 1 * 3 = 3 (draw 1);
    # the model is right below seed 3, so each side is right in one sample of two: β = 0.5, V = 0.25 − 0.5
    generator = RightBelowSeed(3)
    cache = RequestCache(tmp_path / "requests.sqlite")
    simulator = GenerativeSimulator("g", StructuredClient(generator, cache, max_attempts=3, temperature=0.7))
    [simulation] = SimulationObjective([simulator], samples=2).score([root(0)])
    assert sorted(generator.seeds) == [0, 0, 3, 3] and simulator.client.meter.calls == 4
    assert simulation.beta_en == {"g": 0.5} and simulation.beta_target == {"g": 0.5}
    assert simulation.value == pytest.approx(-0.25)
    # re-simulation 1 of sample 1 is draw 1 * 2 + 1 = 3: seed 9, apart from every seed of re-simulation 0
    assert draw_index(1, 1, 2) == 3 and draw_index(2, 0, 1) == 2
    [answer] = simulator.answer([root(0).english], resimulation=[3])
    assert answer.seed == 9 and generator.seeds[-1] == 9
    cache.close()
