"""Token edit distance, the X% target, and edits applied until a target, on constructed id sequences."""

from __future__ import annotations

import random

import pytest

from crossknow.perturb.edits import Edit, percent_count, reach_distance, token_edit_distance


def plain_levenshtein(a: list[int], b: list[int]) -> int:
    """The textbook dynamic programme: insertion, deletion and substitution cost 1 each."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


@pytest.mark.parametrize(("a", "b", "expected"), [
    ([], [], 0),
    ([1, 2, 3], [], 3),
    ([1, 2, 3], [1, 2, 3], 0),
    ([1, 2], [2, 1], 2),  # a swap of two different tokens: two substitutions, no transposition
    ([5, 1, 5], [1, 5, 1], 2),  # delete the first 5, append a 1
    ([1, 2, 3, 4], [1, 9, 3, 4], 1),
    ([1, 2, 3, 4], [1, 7, 8, 2, 3, 4], 2),
])
def test_distance_by_hand(a: list[int], b: list[int], expected: int) -> None:
    assert token_edit_distance(a, b) == expected == plain_levenshtein(a, b)


def test_distance_matches_the_plain_programme_on_random_sequences() -> None:
    rng = random.Random(7)
    for _ in range(200):
        a = [rng.randrange(6) for _ in range(rng.randrange(0, 25))]
        b = [rng.randrange(6) for _ in range(rng.randrange(0, 25))]
        assert token_edit_distance(a, b) == plain_levenshtein(a, b)


@pytest.mark.parametrize(("n", "x", "expected"), [
    (25, 2, 1),  # 0.5 rounds half up
    (24, 2, 0),  # 0.48
    (76, 32, 24),  # 24.32
    (76, 8, 6),  # 6.08
    (10, 100, 10),
    (75, 2, 2),  # 1.5
])
def test_percent_count_rounds_half_up(n: int, x: int, expected: int) -> None:
    assert percent_count(n, x) == expected


def test_substitutions_reach_the_target_exactly() -> None:
    original = list(range(10, 30))
    candidates = [Edit({p: (99,)}, 1) for p in range(20)]
    reached = reach_distance(original, candidates, 7, 0)
    assert reached.distance == 7 == plain_levenshtein(original, reached.ids)
    assert reached.ids[:7] == [99] * 7 and reached.ids[7:] == original[7:]  # candidates taken in their order


def test_a_multi_token_edit_that_would_overshoot_is_passed_over() -> None:
    original = list(range(10))
    # position 0 would become three new tokens (up to 3 more); with 2 to go only the single ones fit
    candidates = [Edit({0: (90, 91, 92)}, 3), Edit({1: (95,)}, 1), Edit({2: (96,)}, 1)]
    reached = reach_distance(original, candidates, 2, 0)
    assert reached.ids == [0, 95, 96, *range(3, 10)]
    assert reached.distance == 2


def test_swaps_are_measured_not_assumed() -> None:
    original = list(range(12))
    swaps = [Edit({p: (original[p + 1],), p + 1: (original[p],)}, 2) for p in range(0, 12, 2)]
    reached = reach_distance(original, swaps, 3, 1)
    # two adjacent swaps, 0 1 2 3 -> 1 0 3 2, cost 3 (insert 1, substitute 1 -> 3, delete the last 3), not 2 + 2
    assert reached.ids == [1, 0, 3, 2, *range(4, 12)]
    assert reached.distance == plain_levenshtein(original, reached.ids) == 3


def test_swaps_end_within_one_above_an_odd_target() -> None:
    original = list(range(12))
    swaps = [Edit({p: (original[p + 2],), p + 2: (original[p],)}, 2) for p in (0, 5)]  # 0<->2, 5<->7
    reached = reach_distance(original, swaps, 3, 1)
    assert reached.distance == plain_levenshtein(original, reached.ids) == 4  # two separate swaps, 2 each


def test_edits_never_touch_one_slot_twice() -> None:
    original = [1, 2, 3, 4]
    candidates = [Edit({0: (7,)}, 1), Edit({0: (8,)}, 1), Edit({1: ()}, 1)]
    reached = reach_distance(original, candidates, 2, 0)
    assert reached.ids == [7, 3, 4]


def test_running_out_of_candidates_stops_short() -> None:
    original = [1, 2, 3, 4, 5]
    reached = reach_distance(original, [Edit({0: (9,)}, 1)], 3, 0)
    assert reached.distance == 1 < 3


def test_an_edit_whose_bound_overstates_is_tried_and_kept_when_it_fits() -> None:
    original = [1, 2, 3, 4, 5]
    # tokens 1 2 3 re-encoded as 2 3: bound max(3, 2) = 3 > the budget of 1, but it only deletes the 1
    word = Edit({0: (2, 3), 1: (), 2: ()}, 3)
    too_far = Edit({3: (7, 8, 9)}, 3)  # measured 3: stays out
    reached = reach_distance(original, [too_far, word], 1, 0)
    assert reached.ids == [2, 3, 4, 5]
    assert reached.distance == plain_levenshtein(original, reached.ids) == 1
