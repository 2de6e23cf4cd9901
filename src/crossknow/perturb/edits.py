"""Token edits applied until a target token edit distance is reached, the distance always measured.

crossknow's definitions (the paper gives none beyond "the token edit distance"): the distance is the Levenshtein
distance of the id sequences (a swap of two tokens costs 2); X percent of n tokens is round-half-up(n * X / 100),
at least 1. Each original token is edited at most once, and `reach_distance` stops with the distance in
[target, target + tolerance], or makes no variant (a failure), never one at a smaller distance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from crossknow.errors import MissingDependencyError


def token_edit_distance(a: Sequence[int], b: Sequence[int]) -> int:
    """Levenshtein distance between two token id sequences (each insertion, deletion, substitution costs 1)."""
    try:
        from rapidfuzz.distance import Levenshtein
    except ImportError as error:
        raise MissingDependencyError("rapidfuzz", "text", "Token edit distances") from error
    return int(Levenshtein.distance(list(a), list(b)))


def percent_count(n: int, percent: int) -> int:
    """round-half-up(n * percent / 100): the target distance of X percent of n tokens, or the number of
    sentences X percent of n sentences rewrites."""
    return int((Decimal(n) * percent / 100).quantize(Decimal(1), rounding=ROUND_HALF_UP))


@dataclass(frozen=True)
class Edit:
    """New token ids for some slots (original token positions) of a sequence."""

    slots: dict[int, tuple[int, ...]]
    """Original position -> the ids that replace that token there (empty: deleted)."""
    bound: int
    """The most this edit can add to the token edit distance: max(a, b) for a block of a slots replaced by b
    tokens, 2 for a swap; by the triangle inequality a batch of edits adds at most the sum of its bounds."""


@dataclass(frozen=True)
class Reached:
    """Where the edits got: the target was met when `distance` is at least it."""

    ids: list[int]
    distance: int
    """The measured token edit distance to the original."""


def _assemble(original: Sequence[int], slots: dict[int, tuple[int, ...]]) -> list[int]:
    ids: list[int] = []
    for position, token in enumerate(original):
        ids.extend(slots.get(position, (token,)))
    return ids


def reach_distance(original: Sequence[int], candidates: Sequence[Edit], target: int, tolerance: int) -> Reached:
    """Apply `candidates`, in their order, until the distance to `original` is at least `target`, or until no
    candidate brings it closer within the tolerance (then it stays below the target). A round takes the next candidates
    that touch no edited slot and fit the budget (target + tolerance - distance) until their bounds cover what is
    missing; when none fits by its bound (a bound can overstate), they are tried one at a time and the first whose
    measured distance stays within the budget is kept. The distance is measured after every round and every try.
    """
    edited: dict[int, tuple[int, ...]] = {}
    remaining = list(candidates)
    distance = 0
    while distance < target:
        budget, missing, spent = target + tolerance - distance, target - distance, 0
        taken, kept = [], []
        for edit in remaining:
            free = not any(s in edited for s in edit.slots)
            if free and spent < missing and edit.bound <= budget - spent:
                edited.update(edit.slots)
                spent += edit.bound
                taken.append(edit)
            elif free:
                kept.append(edit)
        remaining = kept
        if taken:
            distance = token_edit_distance(original, _assemble(original, edited))
        elif not _try_one(original, remaining, edited, distance, target + tolerance):
            break
        else:
            distance = token_edit_distance(original, _assemble(original, edited))
    return Reached(_assemble(original, edited), distance)


def _try_one(original: Sequence[int], remaining: list[Edit], edited: dict[int, tuple[int, ...]], distance: int,
             ceiling: int) -> bool:
    """When no candidate fits by its bound: the first one (in order) whose measured distance lies in
    (distance, ceiling] is applied to `edited` and removed from `remaining`; False when there is none."""
    for k, edit in enumerate(remaining):
        if distance < token_edit_distance(original, _assemble(original, edited | edit.slots)) <= ceiling:
            edited.update(edit.slots)
            del remaining[k]
            return True
    return False
