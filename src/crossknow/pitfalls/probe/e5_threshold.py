"""The e5 check's thresholds, measured on the release (`crossknow.pitfalls.probe.e5` holds the constants it gives).

A released pair passed the paper's LLM check, so it is a positive; its negative is the same English text against
the text of another released pair from a different original question (`partners`). Four kinds, one per check:
`root`, `perturbed`, `choices`, `original`. A threshold is the smallest multiple of 0.01 that at most 1% of a
kind's negatives reach (crossknow's rule); `bench/e5_threshold.py` prints them with the accept rates.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from crossknow.data.pitfalls import LANGUAGE_CODES, load_pairs
from crossknow.pitfalls.probe.e5 import E5Similarity, joined_choices

FALSE_ACCEPT_TARGET = 0.01
"""The most false accepts a threshold may let through, as a share of the negatives (crossknow's choice)."""
GRID = 0.01
"""Thresholds are multiples of this step."""
PERTURBED_LANGUAGES = ("French", "Japanese", "Hindi", "Arabic")
"""Languages whose perturbed pairs are measured: four scripts (Latin, Japanese, Devanagari, Arabic)."""
PERTURBED_PER_LANGUAGE = 100
"""Perturbed pairs drawn from each of `PERTURBED_LANGUAGES` (the long texts are what costs time)."""
SEED = 0
"""Seed of the draw of perturbed pairs and of the shuffle that picks each negative's partner."""
KINDS = ("root", "perturbed", "choices", "original")


@dataclass
class KindScores:
    """S of one kind of text pair in one language: positives (a released pair) and negatives (shuffled)."""

    positives: list[float] = field(default_factory=list)
    negatives: list[float] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)
    """The original English question of each positive, in order."""


def threshold_at(negatives: Sequence[float], target: float = FALSE_ACCEPT_TARGET, grid: float = GRID) -> float:
    """The smallest multiple of `grid` t with at most `target` of `negatives` at or above t."""
    ordered = sorted(negatives, reverse=True)
    allowed = math.floor(target * len(ordered) + 1e-9)  # negatives that may score >= t
    if allowed >= len(ordered):
        return 0.0
    # t must exceed the (allowed + 1)-th highest negative
    step = math.floor(ordered[allowed] / grid + 1e-9) + 1
    return round(step * grid, 10)


def accept_rate(scores: Sequence[float], threshold: float) -> float:
    """The share of `scores` at or above `threshold` (0.0 for none)."""
    return sum(s >= threshold for s in scores) / len(scores) if scores else 0.0


def partners(origins: Sequence[str], seed: int = SEED) -> list[int]:
    """For each position, the position of its negative's partner: the next one, in an order shuffled with
    `seed`, whose origin differs (a cyclic walk; -1 when every position shares one origin)."""
    order = list(range(len(origins)))
    random.Random(seed).shuffle(order)
    result = [-1] * len(origins)
    for k, i in enumerate(order):
        for step in range(1, len(order)):
            j = order[(k + step) % len(order)]
            if origins[j] != origins[i]:
                result[i] = j
                break
    return result


def _score(e5: E5Similarity, english: list[str], target: list[str], origins: list[str], seed: int) -> KindScores:
    pairs = list(zip(english, target, strict=True))
    mates = partners(origins, seed)
    negatives = [(english[i], target[j]) for i, j in enumerate(mates) if j >= 0]
    return KindScores(e5.similarity(pairs), e5.similarity(negatives), list(origins))


def release_scores(
    release: str | Path, languages: Sequence[str] = tuple(LANGUAGE_CODES),
    perturbed_languages: Sequence[str] = PERTURBED_LANGUAGES, perturbed: int = PERTURBED_PER_LANGUAGE,
    seed: int = SEED, e5: E5Similarity | None = None,
) -> dict[str, dict[str, KindScores]]:
    """{kind: {language: scores}} over the release in directory `release` (see the module docstring)."""
    e5 = e5 or E5Similarity()
    scores: dict[str, dict[str, KindScores]] = {kind: {} for kind in KINDS}
    for language in dict.fromkeys([*languages, *perturbed_languages]):
        rows = load_pairs(Path(release) / f"{language}.json")
        if language in languages:
            roots = list({row["oriquestion"]: row for row in reversed(rows)}.values())[::-1]  # first per origin
            origins = [row["oriquestion"] for row in roots]
            scores["root"][language] = _score(e5, origins, [r["transori"] for r in roots], origins, seed)
            aligned = [r for r in roots if len(r["choices"]) == len(r["transchoices"])]
            english = [joined_choices(r["choices"]) for r in aligned]
            target = [joined_choices(r["transchoices"]) for r in aligned]
            scores["choices"][language] = _score(e5, english, target, [r["oriquestion"] for r in aligned], seed)
        if language in perturbed_languages:
            drawn = random.Random(f"{seed}:{language}").sample(rows, min(perturbed, len(rows)))
            origins = [row["oriquestion"] for row in drawn]
            scores["perturbed"][language] = _score(
                e5, [r["question"] for r in drawn], [r["transquestion"] for r in drawn], origins, seed)
            scores["original"][language] = _score(e5, origins, [r["question"] for r in drawn], origins, seed)
    return scores


def pooled(by_language: dict[str, KindScores]) -> KindScores:
    """One kind's scores over all its languages."""
    return KindScores([s for k in by_language.values() for s in k.positives],
                      [s for k in by_language.values() for s in k.negatives],
                      [o for k in by_language.values() for o in k.origins])


THRESHOLD_OF = {"original": "theta", "root": "theta_root", "perturbed": "theta_cross", "choices": "theta_choices"}
"""The constant of `crossknow.pitfalls.probe.e5` that each kind of text pair sets."""


def thresholds(scores: dict[str, dict[str, KindScores]]) -> dict[str, float]:
    """{"theta": θ, "theta_root": θ' at depth 0, "theta_cross": θ' beyond it, "theta_choices": the choices'
    threshold}, each by the module's rule from its kind's negatives."""
    return {THRESHOLD_OF[kind]: threshold_at(pooled(scores[kind]).negatives) for kind in KINDS}


def unperturbed_accept_rate(root: KindScores, choices: KindScores, theta_root: float, theta_choices: float) -> float:
    """The share of one language's released root translations whose question and choices both pass (an
    original question without aligned choices counts on its question alone)."""
    choice_of = dict(zip(choices.origins, choices.positives, strict=True))
    passed = [s >= theta_root and choice_of.get(o, 1.0) >= theta_choices
              for o, s in zip(root.origins, root.positives, strict=True)]
    return sum(passed) / len(passed) if passed else 0.0
