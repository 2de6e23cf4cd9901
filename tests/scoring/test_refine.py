"""Which items a low-precision score leaves open, by hand-computed losses and bounds."""

from __future__ import annotations

import pytest

from crossknow.scoring.normalise import OptionScore
from crossknow.scoring.refine import BF16_TOKEN_ERROR, needs_float32

E = BF16_TOKEN_ERROR


@pytest.mark.parametrize(("gap", "tokens", "open_"), [
    (11 * E, 5, False),  # sum: gap 11e > 5e + 5e; mean token: 2.2e > 2e; per char: 1.1e > e
    (9 * E, 5, True),  # 9e <= 10e under the sum
    (11 * E, 6, True),  # the same gap, more tokens each: the bound grows to 12e
])
def test_an_item_is_open_when_the_gap_is_within_both_options_bounds(gap, tokens, open_):
    options = [OptionScore(-10.0, tokens, 10, 10), OptionScore(-10.0 - gap, tokens, 10, 10)]
    assert needs_float32(options) is open_


def test_an_item_decided_under_one_normalisation_but_not_another_is_open():
    # the sum prefers option 0 by 1 nat, far over its bound 2e; per character both lose 1.0 nat: a tie
    assert needs_float32([OptionScore(-10.0, 1, 10, 10), OptionScore(-11.0, 1, 11, 11)])
    assert not needs_float32([OptionScore(-10.0, 1, 10, 10), OptionScore(-20.0, 1, 10, 10)])
