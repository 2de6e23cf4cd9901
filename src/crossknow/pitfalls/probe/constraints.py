"""Constraints on perturbed pairs (equation 4): English accuracy and semantic similarity.

`EnglishAccuracy(epsilon)`: β̄^E >= 1 − ε (ε = 0.2 is crossknow's: with K = 5, at most one simulator wrong).
`SemanticSimilarity`: S(q^E, q^E') >= θ, S(q^E', q^T') >= θ', or the two sides' choices (crossknow's addition),
S being an LLM judge (the paper's kind of check), e5 embeddings or chrF (within one language only). A constraint
returns, per node, None when satisfied or the reason it is violated.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, Protocol

from crossknow.errors import CrossknowError
from crossknow.pitfalls.pairs import PairNode
from crossknow.pitfalls.probe.e5 import joined_choices
from crossknow.pitfalls.probe.objective import Simulation
from crossknow.pitfalls.simulate import MCQuestion, lettered
from crossknow.scoring.chrf import chrf


class Similarity(Protocol):
    """A semantic similarity S between two texts, higher = closer."""

    name: str

    def similarity(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """S(reference, candidate) for each pair, in order; NaN where S could not be had (an invalid
        judgement), which the constraint reports as such."""
        ...


class Constraint(Protocol):
    """A condition every pair kept by the search satisfies."""

    name: str
    after_simulation: bool
    """True when the check reads the simulation (then it runs after the simulators)."""

    def check(self, nodes: Sequence[PairNode], simulations: Sequence[Simulation] | None) -> list[str | None]:
        """Per node: None when satisfied, else why not."""
        ...


class EnglishAccuracy:
    """β̄^E >= 1 − ε."""

    after_simulation = True

    def __init__(self, epsilon: float = 0.2):
        if not 0 <= epsilon <= 1:
            raise CrossknowError(f"epsilon must lie in [0, 1], got {epsilon}")
        self.epsilon = epsilon
        self.name = f"english_accuracy>={1 - epsilon:g}"

    def check(self, nodes: Sequence[PairNode], simulations: Sequence[Simulation] | None) -> list[str | None]:
        """Violated where the mean English accuracy is below 1 − ε."""
        if simulations is None:
            raise CrossknowError("EnglishAccuracy needs the simulations")
        floor = 1 - self.epsilon
        return [
            None if sim.mean_en >= floor - 1e-12 else f"english accuracy: {sim.mean_en:.3f} < {floor:g}"
            for sim in simulations
        ]


Compare = Literal["original", "cross", "choices"]
"""What a semantic check compares; see the module docstring."""


class SemanticSimilarity:
    """S(q^E, q^E') >= θ (compare="original"), S(q^E', q^T') >= θ' (compare="cross") or S(English choices,
    target choices) >= the choices' threshold (compare="choices"). `root_threshold`, when given, replaces
    `threshold` for unperturbed pairs (depth 0): e5 scores a short question and its translation in another
    range than a long perturbed pair (`crossknow.pitfalls.probe.e5_threshold`)."""

    after_simulation = False

    def __init__(self, similarity: Similarity, threshold: float, compare: Compare,
                 root_threshold: float | None = None):
        if compare not in ("original", "cross", "choices"):
            raise CrossknowError(f"compare must be 'original', 'cross' or 'choices', got {compare!r}")
        self.similarity = similarity
        self.threshold = threshold
        self.root_threshold = threshold if root_threshold is None else root_threshold
        self.compare = compare
        self.name = f"{similarity.name}_{compare}>={threshold:g}"
        if self.root_threshold != threshold:
            self.name += f" (depth 0 >={self.root_threshold:g})"

    def check(self, nodes: Sequence[PairNode], simulations: Sequence[Simulation] | None) -> list[str | None]:
        """Violated where S falls below the threshold."""
        text = self._text
        if self.compare == "original":  # an unperturbed pair is its own original: nothing to compare
            asked = [i for i, n in enumerate(nodes) if n.ancestry]
            pairs = [(text(nodes[i].ancestry[0].english), text(nodes[i].english)) for i in asked]
        elif self.compare == "choices":
            asked = list(range(len(nodes)))
            pairs = [(joined_choices(n.english.choices), joined_choices(n.target.choices)) for n in nodes]
        else:
            asked = list(range(len(nodes)))
            pairs = [(text(n.english), text(n.target)) for n in nodes]
        reasons: list[str | None] = [None] * len(nodes)
        for i, s in zip(asked, self.similarity.similarity(pairs) if pairs else [], strict=True):
            if math.isnan(s):
                reasons[i] = f"{self.name}: invalid judgement"
            elif s < (self.threshold if nodes[i].ancestry else self.root_threshold):
                reasons[i] = f"{self.name}: S = {s:.3f}"
        return reasons


    def _text(self, question: MCQuestion) -> str:
        """What S reads of one side: the question, with its lettered choices when the similarity reads them
        (`reads_choices`: the LLM judge)."""
        if getattr(self.similarity, "reads_choices", False):
            return lettered(question.question, question.choices)
        return question.question


class ChrF:
    """chrF (`crossknow.scoring.chrf`) as a Similarity; in [0, 1]."""

    name = "chrf"

    def __init__(self, order: int = 6, beta: float = 2.0):
        self.order = order
        self.beta = beta

    def similarity(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """chrF of each candidate (second) against its reference (first)."""
        return [self.score(reference, candidate) for reference, candidate in pairs]

    def score(self, reference: str, candidate: str) -> float:
        """chrF of one candidate against one reference."""
        return chrf(candidate, reference, self.order, self.beta)


def violations(
    constraints: Sequence[Constraint], nodes: Sequence[PairNode], simulations: Sequence[Simulation] | None
) -> list[str | None]:
    """Per node, the first violated constraint's reason among `constraints` (None when all hold)."""
    reasons: list[str | None] = [None] * len(nodes)
    for constraint in constraints:
        for i, reason in enumerate(constraint.check(nodes, simulations)):
            reasons[i] = reasons[i] or reason
    return reasons
