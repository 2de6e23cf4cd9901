"""Beam search over perturbed pairs (section 2.4), with the paper's settings as defaults (Appendix B.1).

One batch of original pairs is searched with one beam (crossknow's reading of "an initial batch of 4 bilingual
pairs"). At each level the pairs are checked and scored; a pair with V > θ_inc enters the candidate list and
leaves the search; a level whose highest V is >= θ_pot extends the depth limit to d2; the w best remaining pairs
make the next level's children (`BeamSearch.run_batch`). Unperturbed pairs (depth 0) are scored too, as in NP.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from crossknow.errors import CrossknowError
from crossknow.pitfalls.candidates import CandidateList, CandidateRecord, LineageStep, QuestionSide
from crossknow.pitfalls.pairs import PairNode
from crossknow.pitfalls.probe.constraints import Constraint, violations
from crossknow.pitfalls.probe.objective import Simulation, SimulationObjective
from crossknow.pitfalls.probe.transformation import Transformation
from crossknow.pitfalls.simulate import MCQuestion


@dataclass(frozen=True)
class BeamSettings:
    """The search's parameters; defaults are the paper's (Appendix B.1)."""

    initial_batch: int = 4
    """Original pairs searched together."""
    width: int = 12
    """w: pairs kept in the beam after each level."""
    depth: int = 4
    """d1: the initial depth limit (perturbation steps)."""
    extended_depth: int = 6
    """d2: the depth limit once a level's highest V reaches `potential`."""
    potential: float = 0.6
    """θ_pot: a level whose highest V is at or above it extends the depth limit to d2 (equation 9: ≥)."""
    inclusion: float = 0.8
    """θ_inc: V above which a pair enters the candidate list (section 2.4: "exceeds"; a V equal to it does not)."""
    cap: int = 3
    """k: pairs per original question in the candidate list."""

    def __post_init__(self) -> None:
        if min(self.initial_batch, self.width, self.cap) < 1 or min(self.depth, self.extended_depth) < 0:
            raise CrossknowError(f"invalid beam settings: {self}")


@dataclass(frozen=True)
class Level:
    """What happened at one depth of one batch."""

    depth: int
    scored: int
    """Pairs the simulators scored."""
    max_value: float | None
    """Highest V among them."""
    included: list[str]
    """Ids of the pairs that entered the candidate list."""
    beam: list[str]
    """Ids kept in the beam, best first."""
    depth_limit: int
    """The depth limit after this level."""


@dataclass
class SearchStats:
    """Counts over every batch searched."""

    levels: list[list[Level]] = field(default_factory=list)
    """Per batch, its levels."""
    scored: int = 0
    included: int = 0
    unscored: int = 0
    """Pairs left out because a simulator gave no valid answer after re-simulation."""
    duplicates: int = 0
    dropped_by_cap: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    """Why pairs were not made or not kept (transformation failures, constraint violations), counted."""


class BeamSearch:
    """The search method; every part is passed in explicitly."""

    def __init__(
        self, settings: BeamSettings, transformation: Transformation | None, objective: SimulationObjective,
        constraints: Sequence[Constraint], candidates: CandidateList, recipe: str,
    ):
        if candidates.cap != settings.cap:
            raise CrossknowError(f"the candidate list's cap {candidates.cap} differs from k = {settings.cap}")
        self.settings = settings
        self.transformation = transformation
        self.objective = objective
        self.before = [c for c in constraints if not c.after_simulation]
        self.after = [c for c in constraints if c.after_simulation]
        self.candidates = candidates
        self.recipe = recipe
        self.stats = SearchStats()

    def run_batch(self, roots: Sequence[PairNode]) -> list[Level]:
        """Search from `roots` (at most `initial_batch` original pairs); the levels it went through.

        At each level: pairs of a question that already has k pairs are dropped; the semantic constraints run, the
        simulators score V, then the English-accuracy constraint (an unscored pair is counted and left out); a pair with
        V > θ_inc (section 2.4's "exceeds") enters the candidate list, highest V first, and leaves the search; a highest
        V >= θ_pot at the level (equation 9; "max over the beam" read as over the pairs scored at the level) sets the
        depth limit to d2; the beam keeps the w highest-V remaining pairs (ties in the order made) and, below the limit,
        their children form the next level, a child that repeats a pair of this batch being dropped.
        """
        s = self.settings
        if len(roots) > s.initial_batch:
            raise CrossknowError(f"a batch holds at most {s.initial_batch} pairs, got {len(roots)}")
        seen: set[tuple[str, str]] = set()
        level, depth, limit, levels = self._unseen(roots, seen), 0, s.depth, []
        while level:
            scored = self._score(self._uncapped(level))
            included = self._include(scored)
            values = [sim.value for _, sim in scored]
            max_value = max(values) if values else None  # type: ignore[type-var]
            if max_value is not None and max_value >= s.potential:
                limit = max(s.depth, s.extended_depth)
            remaining = self._uncapped_scored([(n, sim) for n, sim in scored if n.id not in included])
            beam = sorted(remaining, key=lambda pair: -pair[1].value)[: s.width]  # type: ignore[operator]
            levels.append(Level(depth, len(scored), max_value, included, [n.id for n, _ in beam], limit))
            if depth >= limit or self.transformation is None or not beam:
                break
            expansion = self.transformation.expand([n for n, _ in beam])
            for rejection in expansion.rejected:
                self.stats.rejected[_kind(rejection.reason)] += 1
            level, depth = self._unseen(expansion.children, seen), depth + 1
        self.stats.levels.append(levels)
        return levels

    def _unseen(self, nodes: Sequence[PairNode], seen: set[tuple[str, str]]) -> list[PairNode]:
        """Nodes whose (English, target) text is new in this batch; duplicates counted."""
        kept = []
        for node in nodes:
            key = (node.english.question, node.target.question)
            if key in seen:
                self.stats.duplicates += 1
            else:
                seen.add(key)
                kept.append(node)
        return kept

    def _uncapped(self, nodes: Sequence[PairNode]) -> list[PairNode]:
        kept = [n for n in nodes if not self.candidates.full(n.source_id)]
        self.stats.dropped_by_cap += len(nodes) - len(kept)
        return kept

    def _uncapped_scored(self, scored: list[tuple[PairNode, Simulation]]) -> list[tuple[PairNode, Simulation]]:
        kept = [(n, sim) for n, sim in scored if not self.candidates.full(n.source_id)]
        self.stats.dropped_by_cap += len(scored) - len(kept)
        return kept

    def _score(self, nodes: list[PairNode]) -> list[tuple[PairNode, Simulation]]:
        """The nodes that pass every constraint, with their (valid) simulations, in order."""
        reasons = violations(self.before, nodes, None)
        self._count(reasons)
        nodes = [n for n, reason in zip(nodes, reasons, strict=True) if reason is None]
        simulations = self.objective.score(nodes)
        scored = [(n, sim) for n, sim in zip(nodes, simulations, strict=True) if sim.value is not None]
        self.stats.unscored += len(nodes) - len(scored)
        self.stats.scored += len(scored)
        reasons = violations(self.after, [n for n, _ in scored], [sim for _, sim in scored])
        self._count(reasons)
        return [pair for pair, reason in zip(scored, reasons, strict=True) if reason is None]

    def _include(self, scored: list[tuple[PairNode, Simulation]]) -> list[str]:
        """Add the qualifying pairs, best first, while their question has room; their ids."""
        included = []
        for node, sim in sorted(scored, key=lambda pair: -pair[1].value):  # type: ignore[operator]
            if not sim.value > self.settings.inclusion:  # type: ignore[operator]  # "exceeds" (section 2.4)
                break
            if node.id in self.candidates:  # found before a resume: it counts, once
                included.append(node.id)
            elif self.candidates.add(candidate_record(node, sim, self.recipe)):
                included.append(node.id)
                self.stats.included += 1
        return included

    def _count(self, reasons: list[str | None]) -> None:
        for reason in reasons:
            if reason is not None:
                self.stats.rejected[_kind(reason)] += 1


def _kind(reason: str) -> str:
    """The kind of a rejection reason (the text before its first colon), for counting."""
    return reason.split(":", 1)[0].strip()


def candidate_record(node: PairNode, simulation: Simulation, recipe: str) -> CandidateRecord:
    """The record of a scored node (its simulation has a value)."""
    if simulation.value is None:
        raise ValueError(f"pair {node.id} is unscored: {simulation.error}")
    steps = [*node.ancestry[1:], node] if node.depth else []
    inserted = node.inserted
    return CandidateRecord(
        id=node.id, source_id=node.source_id, recipe=recipe,
        english=_side(node.english, inserted.before_en, inserted.after_en),
        target=_side(node.target, inserted.before_target, inserted.after_target),
        value=simulation.value, beta_en=simulation.beta_en, beta_target=simulation.beta_target,
        depth=node.depth, parent_id=node.parent_id, lineage=[_step(step) for step in steps],
    )


def _step(node: PairNode) -> LineageStep:
    perturbation, parent_id = node.perturbation, node.parent_id
    assert perturbation is not None and parent_id is not None  # a node below the root
    return LineageStep(
        node_id=node.id, parent_id=parent_id, depth=node.depth, perturbation_en=perturbation.text_en,
        perturbation_target=" ".join(t for t in (perturbation.before_target, perturbation.after_target) if t),
        wrong_option=perturbation.wrong_option, placement=perturbation.placement,
    )


def _side(question: MCQuestion, before: str, after: str) -> QuestionSide:
    return QuestionSide(question=question.question, choices=list(question.choices), answer=question.answer,
                        lang=question.lang, before=before, after=after)
