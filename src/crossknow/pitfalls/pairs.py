"""The nodes the probe searches over: bilingual pairs, the perturbations that made them, their lineage.

A PairNode is one (q^E, q^T) pair: a root (an original English question and its translation, depth
0) or a child made by one perturbation of its parent. Node ids are derived from the lineage (source
id, target language, and every perturbation text on the way), so a search replayed through the
request cache after a kill gives every node the id it had before.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from crossknow.pitfalls.simulate import MCQuestion


@dataclass(frozen=True)
class SourceQuestion:
    """An original English multiple-choice question the probe starts from."""

    id: str
    """Unique within the probe's sources (the cap of k pairs counts per source id)."""
    question: MCQuestion


Placement = Literal["before", "after"]
"""Where one inserted text goes: before the question (a prefix, the release's `prequestion`) or after it
(a suffix, the release's `sufquestion`)."""

PLACEMENTS: tuple[Placement, ...] = ("before", "after")


@dataclass(frozen=True)
class Perturbation:
    """Text inserted into both sides of a pair by one transformation step.

    q^E' = before_en + q^E + after_en and q^T' = before_target + q^T + after_target, each part joined
    by one space where it is not empty; the target parts are translations of the English ones only, put on
    the same side as the English text they translate, so a translated pair keeps the English placement."""

    before_en: str
    after_en: str
    before_target: str
    after_target: str
    wrong_option: int | None
    """Index of the incorrect option the perturbation was written from; None when none was used
    (the direct perturbation)."""

    @classmethod
    def placed(cls, text_en: str, text_target: str, placement: Placement, wrong_option: int | None) -> Perturbation:
        """One inserted text δq^E and its translation δq^T, both before or both after the question."""
        if placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {PLACEMENTS}, not {placement!r}")
        if placement == "before":
            return cls(text_en, "", text_target, "", wrong_option)
        return cls("", text_en, "", text_target, wrong_option)

    @property
    def placement(self) -> Literal["before", "after", "both", "none"]:
        """Where the English text went: 'before', 'after', 'both' (the direct perturbation's rewrite) or
        'none' (nothing inserted)."""
        before, after = bool(self.before_en.strip()), bool(self.after_en.strip())
        return "both" if before and after else "before" if before else "after" if after else "none"

    def apply(self, english: MCQuestion, target: MCQuestion) -> tuple[MCQuestion, MCQuestion]:
        """The perturbed (English, target) questions; choices and answers are unchanged."""
        return (
            _with_text(english, _join(self.before_en, english.question, self.after_en)),
            _with_text(target, _join(self.before_target, target.question, self.after_target)),
        )

    @property
    def text_en(self) -> str:
        """The inserted English text (δq^E), before and after parts joined."""
        return _join(self.before_en, self.after_en)


@dataclass(frozen=True)
class PairNode:
    """One bilingual pair in the search tree."""

    id: str
    source_id: str
    english: MCQuestion
    target: MCQuestion
    depth: int
    """Perturbation steps from the root (0 = the unperturbed pair)."""
    parent_id: str | None
    perturbation: Perturbation | None
    """The step that made this node from its parent; None for a root."""
    ancestry: tuple[PairNode, ...] = ()
    """The nodes from the root to the parent, in order (empty for a root)."""

    @property
    def inserted(self) -> Perturbation:
        """All text inserted on the way from the root, as one perturbation of the root: its before parts are
        the steps' before texts, newest first (each step's text goes outside the question it was given),
        its after parts the steps' after texts, oldest first; applied to the root's questions it gives this
        node's. The release keeps the same split as `prequestion`/`sufquestion` and `transpre`/`transsuf`."""
        steps = [node.perturbation for node in (*self.ancestry, self) if node.perturbation is not None]
        return Perturbation(
            _join(*(s.before_en for s in reversed(steps))), _join(*(s.after_en for s in steps)),
            _join(*(s.before_target for s in reversed(steps))), _join(*(s.after_target for s in steps)), None,
        )


def root_node(source: SourceQuestion, target: MCQuestion) -> PairNode:
    """The depth-0 node of a source question and its translation."""
    return PairNode(
        id=f"{source.id}:{target.lang}:{_digest(source.question.question, target.question)}",
        source_id=source.id, english=source.question, target=target, depth=0, parent_id=None, perturbation=None,
    )


def child_node(parent: PairNode, perturbation: Perturbation) -> PairNode:
    """The node made by applying `perturbation` to `parent`; its id hashes the parent's id and the text."""
    english, target = perturbation.apply(parent.english, parent.target)
    digest = _digest(parent.id, perturbation.before_en, perturbation.after_en, str(perturbation.wrong_option))
    return PairNode(
        id=f"{parent.source_id}:{target.lang}:{digest}", source_id=parent.source_id, english=english,
        target=target, depth=parent.depth + 1, parent_id=parent.id, perturbation=perturbation,
        ancestry=(*parent.ancestry, parent),
    )


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:12]


def _join(*parts: str) -> str:
    return " ".join(part.strip() for part in parts if part.strip())


def _with_text(question: MCQuestion, text: str) -> MCQuestion:
    return MCQuestion(question=text, choices=question.choices, answer=question.answer, lang=question.lang)
