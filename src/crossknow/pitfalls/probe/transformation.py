"""Transformations: how the probe makes perturbed pairs from a pair, through a proxy LLM.

`ProxyPerturbation` (the paper's φ, section 2.2): per incorrect option, a distraction by Appendix E's template
(temperature 0.7), put before or after the question by a seeded coin (`placement`: crossknow's choice, the paper
leaves the side open), and only the distraction translated. `DirectPerturbation` (DP): Appendix E's template, the
question kept verbatim. Seeds come from the parent's id and the option, so a resumed search replays the cache.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from crossknow.generation.ask import Ask, ChatPrompt, CompletionPrompt, Reading, TextOutput, TextParser
from crossknow.pitfalls.pair_translation import (
    EMPTY_OUTPUT,
    coded,
    field_problem,
)
from crossknow.pitfalls.pairs import PLACEMENTS, PairNode, Perturbation, Placement, child_node
from crossknow.pitfalls.prompts import (
    DIRECT_OUTPUTS,
    DIRECT_PERTURBATION_TEMPLATE,
    PERTURBATION_OUTPUTS,
    PERTURBATION_TEMPLATE,
    direct_completion,
    fill,
    perturbation_completion,
)
from crossknow.pitfalls.proxy import ProxyLLM
from crossknow.pitfalls.simulate import MCQuestion


@dataclass(frozen=True)
class Rejection:
    """A child the transformation could not make."""

    parent_id: str
    reason: str


@dataclass
class Expansion:
    """What one expansion produced."""

    children: list[PairNode] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)


class Transformation(Protocol):
    """Makes perturbed children of pairs."""

    name: str

    def expand(self, parents: Sequence[PairNode]) -> Expansion:
        """The children of every parent, in parent order, and the children that could not be made."""
        ...


def prompt_seed(*parts: str) -> int:
    """A stable 31-bit seed from text parts (the same across processes and resumes)."""
    return int.from_bytes(hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()[:4], "big") >> 1


def placement(parent_id: str, option: int) -> Placement:
    """Where the distraction written from incorrect option `option` of pair `parent_id` goes: 'before' or
    'after' the question, by a fair coin seeded by both (crossknow's choice; the paper does not say: see
    docs/pitfalls.md). The same on every run and resume, since a node's id is derived from its lineage."""
    return PLACEMENTS[prompt_seed(parent_id, str(option), "placement") % 2]


_DISTRACTION = re.compile(r"generated\s+distraction\s*:", re.I)
_NEW_QUESTION = re.compile(r"new\s+question\s*:", re.I)


def _after_marker(marker: re.Pattern[str], text: str) -> tuple[str | None, str | None]:
    """The text after `marker` (or the whole text when the marker is absent), stripped of the
    template's braces, angle brackets and quotes; (None, reason) when nothing is left."""
    found = marker.search(text)
    value = text[found.end() :] if found else text
    value = value.strip().strip("{}").strip().strip("<>\"'").strip()
    return (value, None) if value else (None, f"{EMPTY_OUTPUT}: empty perturbation")


def parse_distraction(text: str) -> tuple[str | None, str | None]:
    """The distraction of an Appendix E perturbation output ("Generated Distraction: ...")."""
    return _after_marker(_DISTRACTION, text)


def distraction_parser(question: str, option: str = "", examples: Sequence[str] = ()) -> TextParser:
    """The parser of a distraction written for `question` from its incorrect option `option`, chat ("Generated
    Distraction: ...") or completion (one line): `parse_distraction`, then no copy of the question and no echo of the
    prompt (`field_problem`; `examples`, the outputs of the completion prompt's examples, none for a chat prompt).
    The distraction may repeat its option: the paper asks for one "that aligns with the incorrect option"."""

    def parse(text: str) -> tuple[str | None, str | None]:
        value, error = parse_distraction(text)
        problem = error or field_problem(value, (question,), "English", examples=examples,  # type: ignore[arg-type]
                                         context=(option,) if option else ())
        return (None, problem) if problem else (value, None)

    return parse


DISTRACTION_READING = Reading(TextOutput(parse_distraction), TextOutput(parse_distraction))
"""Free text in either form; each distraction's own parser (`distraction_parser`) checks it."""


def parse_new_question(text: str) -> tuple[str | None, str | None]:
    """The rewritten question of a direct-perturbation output ("New question: ...")."""
    return _after_marker(_NEW_QUESTION, text)


class ProxyPerturbation:
    """Appendix E perturbation from each incorrect option; see the module docstring."""

    name = "appendix_e_perturbation"

    def __init__(self, proxy: ProxyLLM, language: str):
        self.proxy = proxy
        self.language = language
        """The target language's name, as the translation prompt says it."""

    def expand(self, parents: Sequence[PairNode]) -> Expansion:
        """One child per (parent, incorrect option)."""
        asked = [(p, k) for p in parents for k in range(len(p.english.choices)) if k != p.english.answer]
        seeds = [prompt_seed(p.id, str(k)) for p, k in asked]
        outcomes = self.proxy.perturber.ask_many([self._ask(p.english, k) for p, k in asked], DISTRACTION_READING,
                                                 seeds=seeds)
        made = [(p, k, o.value) for (p, k), o in zip(asked, outcomes, strict=True) if o.valid]
        expansion = Expansion(rejected=[
            Rejection(p.id, f"perturbation {coded(o.error or '')}")
            for (p, _), o in zip(asked, outcomes, strict=True) if not o.valid
        ])
        translations = self.proxy.translate([text for _, _, text in made], self.language)
        for (parent, k, text), (translated, error) in zip(made, translations, strict=True):
            if translated is None:
                expansion.rejected.append(Rejection(parent.id, error or "translation failed"))
            else:
                step = Perturbation.placed(text, translated, placement(parent.id, k), k)
                expansion.children.append(child_node(parent, step))
        return expansion


    @staticmethod
    def _ask(question: MCQuestion, option: int) -> Ask:
        """A distraction from incorrect option `option`: Appendix E's template for a chat model, crossknow's few-shot
        `perturbation_completion` (one line, which may not repeat an example's distraction) for a base model."""
        wrong = question.choices[option]
        return Ask(ChatPrompt(None, fill(PERTURBATION_TEMPLATE, question=question.question,
                                         answer=question.choices[question.answer], wrong_answer=wrong)),
                   CompletionPrompt(perturbation_completion(question.question, wrong)),
                   chat_parse=distraction_parser(question.question, wrong),
                   completion_parse=distraction_parser(question.question, wrong, PERTURBATION_OUTPUTS))


class DirectPerturbation:
    """Appendix E's direct perturbation, one per pair (the DP baseline); see the module docstring."""

    name = "direct_perturbation"

    def __init__(self, proxy: ProxyLLM, language: str):
        self.proxy = proxy
        self.language = language

    def expand(self, parents: Sequence[PairNode]) -> Expansion:
        """One child per parent whose rewrite keeps the question verbatim."""
        expansion = Expansion()
        split = self.proxy.perturber.per_form(chat=self._rewritten, completion=self._written_by_fields)(
            parents, expansion)
        texts = [text for _, before, after in split for text in (before, after)]
        translations = self.proxy.translate(texts, self.language)
        for j, (parent, before, after) in enumerate(split):
            (before_t, error_b), (after_t, error_a) = translations[2 * j], translations[2 * j + 1]
            if before_t is None or after_t is None:
                expansion.rejected.append(Rejection(parent.id, error_b or error_a or "translation failed"))
            else:
                expansion.children.append(child_node(parent, Perturbation(before, after, before_t, after_t, None)))
        return expansion

    def _written_by_fields(self, parents: Sequence[PairNode], expansion: Expansion) -> list[tuple[PairNode, str, str]]:
        """(parent, text before, text after) from a base model: crossknow's `direct_completion`, the text before and
        the text after the question each asked on its own line, each checked like a distraction (no copy of the
        question, no echo, not empty); the question stays verbatim by construction."""
        asked = [(p, side) for p in parents for side in ("before", "after")]
        prompts = [CompletionPrompt(direct_completion(p.english.question, side)) for p, side in asked]
        seeds = [prompt_seed(p.id, "direct", side) for p, side in asked]
        parsers = [distraction_parser(p.english.question, examples=DIRECT_OUTPUTS[side]) for p, side in asked]
        outcomes = self.proxy.perturber.call_many(prompts, TextOutput(parse_distraction), seeds=seeds, parsers=parsers)
        split = []
        for k, parent in enumerate(parents):
            before, after = outcomes[2 * k], outcomes[2 * k + 1]
            if before.valid and after.valid:
                split.append((parent, before.value, after.value))
            else:
                error = (before if not before.valid else after).error or ""
                expansion.rejected.append(Rejection(parent.id, f"direct perturbation {coded(error)}"))
        return split

    def _rewritten(self, parents: Sequence[PairNode], expansion: Expansion) -> list[tuple[PairNode, str, str]]:
        """(parent, text before, text after) from a chat model's rewrite with Appendix E's template, which must hold
        the question verbatim (its rule 4); a rewrite that does not is rejected with that reason."""
        prompts = [ChatPrompt(None, fill(DIRECT_PERTURBATION_TEMPLATE, question=p.english.question)) for p in parents]
        seeds = [prompt_seed(p.id, "direct") for p in parents]
        outcomes = self.proxy.perturber.call_many(prompts, TextOutput(parse_new_question), seeds=seeds)
        split: list[tuple[PairNode, str, str]] = []
        for parent, outcome in zip(parents, outcomes, strict=True):
            position = outcome.value.find(parent.english.question) if outcome.valid else -1
            if not outcome.valid or position < 0:
                reason = outcome.error if not outcome.valid else "the rewrite does not keep the question verbatim"
                expansion.rejected.append(Rejection(parent.id, f"direct perturbation: {reason}"))
                continue
            before, after = outcome.value[:position], outcome.value[position + len(parent.english.question) :]
            split.append((parent, before.strip(), after.strip()))
        return split
