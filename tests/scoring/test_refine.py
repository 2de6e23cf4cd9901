"""Which items a low-precision score leaves open, by hand-computed losses and bounds."""

from __future__ import annotations

import pytest

from crossknow.scoring.normalise import OptionScore
from crossknow.scoring.refine import BF16_ERROR, needs_float32

E = BF16_ERROR


@pytest.mark.parametrize(("gap", "tokens", "open_"), [
    (4.4 * E, 4, False),  # sum: a gap of 4.4e over the two bounds e * sqrt(4) each; per token and char alike
    (3.6 * E, 4, True),  # 3.6e <= 4e
    (4.4 * E, 9, True),  # the same gap, more tokens each: the bounds grow to 3e each
])
def test_an_item_is_open_when_the_gap_is_within_both_options_bounds(gap, tokens, open_):
    options = [OptionScore(-10.0, tokens, 10, 10), OptionScore(-10.0 - gap, tokens, 10, 10)]
    assert needs_float32(options) is open_


def test_an_item_decided_under_one_normalisation_but_not_another_is_open():
    # the sum prefers option 0 by 10 nats, over its bound 2e; per character both lose 1.0 nat: a tie
    assert 10.0 > 2 * E
    assert needs_float32([OptionScore(-100.0, 1, 100, 100), OptionScore(-110.0, 1, 110, 110)])
    assert not needs_float32([OptionScore(-100.0, 1, 100, 100), OptionScore(-200.0, 1, 100, 100)])
