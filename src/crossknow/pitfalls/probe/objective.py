"""The probe's objective: the simulation score V of a pair over K simulators (section 2.3).

V = (β̄^E)^γ − β̄^T, β̄ the simulators' mean accuracy on the English and the target question, γ = 2 (Appendix
B.1). An invalid answer never counts as wrong: the question is re-simulated with fresh seeds, up to
`max_resimulations` times, and a pair still lacking a valid answer from some simulator is unscored (None, with
the reason). With `samples` > 1 each sample is a draw of its own (`simulate.draw_index`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from crossknow.errors import CrossknowError
from crossknow.pitfalls.pairs import PairNode
from crossknow.pitfalls.simulate import MCQuestion, Simulator, draw_index


def simulation_score(beta_en: Sequence[float], beta_target: Sequence[float], gamma: float = 2.0) -> float:
    """V = (mean of beta_en)^gamma − mean of beta_target (equation 8)."""
    if not beta_en or len(beta_en) != len(beta_target):
        raise CrossknowError(f"V needs K >= 1 accuracies per side, got {len(beta_en)} and {len(beta_target)}")
    return (sum(beta_en) / len(beta_en)) ** gamma - sum(beta_target) / len(beta_target)


@dataclass(frozen=True)
class Simulation:
    """The simulators' verdict on one pair."""

    beta_en: dict[str, float]
    """Accuracy of each simulator (by name) on the English question over its valid samples."""
    beta_target: dict[str, float]
    """Accuracy of each simulator on the target question."""
    value: float | None
    """V of the pair; None when some simulator gave no valid answer after the re-simulations."""
    invalid_answers: int
    """Invalid answers received for this pair (each one asked again)."""
    error: str | None = None
    """Why the pair is unscored; None when scored."""

    @property
    def mean_en(self) -> float:
        """β̄^E: the mean English accuracy over the simulators."""
        return sum(self.beta_en.values()) / len(self.beta_en)


@dataclass
class SimulationMeter:
    """What simulation cost so far."""

    questions: int = 0
    """Questions sent to simulators, re-simulations included."""
    invalid_answers: int = 0
    resimulated: int = 0
    """Questions asked again after an invalid answer."""
    unscored_pairs: int = 0
    seconds: float = 0.0
    per_simulator_seconds: dict[str, float] = field(default_factory=dict)


class SimulationObjective:
    """Scores pairs by V over the simulators; see the module docstring."""

    def __init__(
        self, simulators: Sequence[Simulator], *, gamma: float = 2.0, samples: int = 1, max_resimulations: int = 2
    ):
        names = [simulator.name for simulator in simulators]
        if not names:
            raise CrossknowError("the objective needs at least one simulator")
        if len(set(names)) != len(names):
            raise CrossknowError(f"simulator names must be unique, got {names}")
        if samples < 1 or max_resimulations < 0:
            raise CrossknowError(f"samples must be >= 1 and max_resimulations >= 0, got {samples}, {max_resimulations}")
        self.simulators = list(simulators)
        self.gamma = gamma
        self.samples = samples
        self.max_resimulations = max_resimulations
        self.meter = SimulationMeter()

    def score(self, nodes: Sequence[PairNode]) -> list[Simulation]:
        """One Simulation per node, in order: each simulator answers both sides `samples` times."""
        started = time.monotonic()
        # correct[s][i][side]: correctness of the valid answers of simulator s to node i's side (0 en, 1 target)
        correct = [[([], []) for _ in nodes] for _ in self.simulators]
        invalid = [0] * len(nodes)
        errors: dict[int, str] = {}
        for s, simulator in enumerate(self.simulators):
            wanted = [(i, side, k) for i in range(len(nodes)) for side in (0, 1) for k in range(self.samples)]
            for round_ in range(self.max_resimulations + 1):
                if not wanted:
                    break
                questions = [_side(nodes[i], side) for i, side, _ in wanted]
                draws = [draw_index(round_, k, self.samples) for _, _, k in wanted]
                answers = self._ask(simulator, questions, round_ if self.samples == 1 else draws)
                self.meter.resimulated += len(wanted) if round_ else 0
                missing = []
                for (i, side, k), question, answer in zip(wanted, questions, answers, strict=True):
                    if answer.choice is None:
                        invalid[i] += 1
                        self.meter.invalid_answers += 1
                        missing.append((i, side, k))
                        errors[i] = f"{simulator.name}: {answer.error or 'invalid answer'}"
                    else:
                        correct[s][i][side].append(answer.choice == question.answer)
                wanted = missing
            for i in dict.fromkeys(i for i, _, _ in wanted):  # once per pair, even when both sides stay invalid
                errors[i] = f"no valid answer after {self.max_resimulations} re-simulations ({errors[i]})"
        results = []
        for i in range(len(nodes)):
            if any(len(correct[s][i][side]) < self.samples for s in range(len(self.simulators)) for side in (0, 1)):
                self.meter.unscored_pairs += 1
                results.append(Simulation({}, {}, None, invalid[i], errors[i]))
                continue
            beta = [
                {sim.name: sum(correct[s][i][side]) / self.samples for s, sim in enumerate(self.simulators)}
                for side in (0, 1)
            ]
            value = simulation_score(list(beta[0].values()), list(beta[1].values()), self.gamma)
            results.append(Simulation(beta[0], beta[1], value, invalid[i]))
        self.meter.seconds += time.monotonic() - started
        return results

    def _ask(self, simulator: Simulator, questions: list[MCQuestion], resimulation: int | list[int]) -> list:
        started = time.monotonic()
        answers = simulator.answer(questions, resimulation=resimulation)
        if len(answers) != len(questions):
            raise CrossknowError(f"simulator {simulator.name!r} gave {len(answers)} answers for {len(questions)}")
        spent = time.monotonic() - started
        seconds = self.meter.per_simulator_seconds
        seconds[simulator.name] = seconds.get(simulator.name, 0.0) + spent
        self.meter.questions += len(questions)
        return answers


def _side(node: PairNode, side: int) -> MCQuestion:
    return node.english if side == 0 else node.target
