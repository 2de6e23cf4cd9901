"""Scripted parts for the probe's unit tests: simulators whose V is a known function of the
perturbation text, and a transformation that writes perturbations from a script.

A perturbation is the marker `<k:n>` (k = the incorrect option it came from, n = its weight). Of the
K = 100 scripted simulators, simulator j answers the target question wrong iff j < the sum of the
weights in the text (so β̄^T = 1 − min(sum, 100) / 100) and the English question always right, unless
the text holds `<E:m>`: then simulators j < m answer English wrong too. So V = 1 − β̄^T = sum / 100 when
no `<E:m>` is present: V is the sum of the weights along the lineage, in hundredths.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from crossknow.pitfalls.pairs import PairNode, Perturbation, SourceQuestion, child_node, root_node
from crossknow.pitfalls.probe.transformation import Expansion
from crossknow.pitfalls.simulate import MCQuestion, SimAnswer

K = 100
_WEIGHT = re.compile(r"<\d+:(\d+)>")
_ENGLISH = re.compile(r"<E:(\d+)>")


def weight(text: str) -> int:
    """The sum of the weights in a text."""
    return sum(int(n) for n in _WEIGHT.findall(text))


class ScriptedSimulator:
    """Simulator j of the module docstring."""

    def __init__(self, j: int):
        self.name = f"scripted-{j}"
        self.j = j

    def answer(self, questions: Sequence[MCQuestion], resimulation: int | Sequence[int] = 0) -> list[SimAnswer]:
        """Right or wrong by the markers in the text; a wrong answer is the next choice."""
        answers = []
        for q in questions:
            wrong_english = sum(int(m) for m in _ENGLISH.findall(q.question))
            wrong = self.j < (weight(q.question) if q.lang != "en" else wrong_english)
            answers.append(SimAnswer((q.answer + 1) % len(q.choices) if wrong else q.answer, None, None))
        return answers


def scripted_simulators() -> list[ScriptedSimulator]:
    """The K scripted simulators."""
    return [ScriptedSimulator(j) for j in range(K)]


def source(i: int, choices: int = 4) -> SourceQuestion:
    """Source question s{i} with `choices` choices, answer 0."""
    options = tuple(f"option {c}" for c in range(choices))
    return SourceQuestion(f"s{i}", MCQuestion(f"Question {i}?", options, 0, "en"))


def root(i: int, choices: int = 4) -> PairNode:
    """The unperturbed pair of source s{i}, its target side marked [fr]."""
    s = source(i, choices)
    return root_node(s, MCQuestion(f"[fr] {s.question.question}", s.question.choices, 0, "fr"))


class ScriptedTransformation:
    """One child per incorrect option k of each parent, with weight `script(path + (k,))` (0 when the
    script returns None: no child); `path` is the parent's tuple of options from its root, and
    `paths` maps every node made to its path."""

    name = "scripted"

    def __init__(self, script: Callable[[str, tuple[int, ...]], int | str | None]):
        self.script = script
        self.paths: dict[str, tuple[str, tuple[int, ...]]] = {}
        self.expanded: list[list[str]] = []

    def path(self, node: PairNode) -> tuple[str, tuple[int, ...]]:
        """(source id, options from the root) of a node."""
        return self.paths.get(node.id, (node.source_id, ()))

    def expand(self, parents: Sequence[PairNode]) -> Expansion:
        """Children from the script; a str from the script is used as the marker text itself."""
        self.expanded.append([p.id for p in parents])
        expansion = Expansion()
        for parent in parents:
            source_id, path = self.path(parent)
            for k in range(1, len(parent.english.choices)):
                got = self.script(source_id, (*path, k))
                if got is None:
                    continue
                text = got if isinstance(got, str) else f"<{k}:{got}>"
                child = child_node(parent, Perturbation("", text, "", text, k))
                self.paths[child.id] = (source_id, (*path, k))
                expansion.children.append(child)
        return expansion
