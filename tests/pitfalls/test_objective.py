"""V over K simulators on hand-computed β values, and invalid answers re-simulated, never counted wrong."""

from __future__ import annotations

import pytest

from crossknow.errors import CrossknowError
from crossknow.pitfalls.objective import SimulationObjective, simulation_score
from crossknow.pitfalls.simulate import SimAnswer

from .scripted import root


class Listed:
    """Answers from a list per side ('en'/'fr'): True = right, False = wrong, None = invalid; each call
    takes the next entry of that side's list, so a re-simulation gets the following one."""

    def __init__(self, name, en, fr):
        self.name = name
        self.script = {"en": list(en), "fr": list(fr)}
        self.asked = 0

    def answer(self, questions):
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


def test_simulator_names_must_be_unique():
    with pytest.raises(CrossknowError, match="unique"):
        SimulationObjective([Listed("a", [], []), Listed("a", [], [])])
