"""Normalisations and predictions on constructed numbers whose answers are worked out by hand."""

from __future__ import annotations

from crossknow.scoring.normalise import Normalisation, OptionScore, predict

# option 0: sum -6 over 2 tokens, 4 chars, 12 bytes  -> mean 3.0, sum 6, per char 1.5, per byte 0.5
# option 1: sum -9 over 9 tokens, 18 chars, 18 bytes -> mean 1.0, sum 9, per char 0.5, per byte 0.5
# option 2: sum -5 over 1 token, 2 chars, 2 bytes    -> mean 5.0, sum 5, per char 2.5, per byte 2.5
OPTIONS = [OptionScore(-6.0, 2, 4, 12), OptionScore(-9.0, 9, 18, 18), OptionScore(-5.0, 1, 2, 2)]


def test_each_normalisation_picks_its_own_winner():
    assert predict(OPTIONS, Normalisation.MEAN_TOKEN) == 1
    assert predict(OPTIONS, Normalisation.SUM) == 2
    assert predict(OPTIONS, Normalisation.PER_CHAR) == 1


def test_ties_go_to_the_lower_index():
    assert predict(OPTIONS, Normalisation.PER_BYTE) == 0  # options 0 and 1 both lose 0.5 per byte


def test_loss_values():
    assert OPTIONS[0].loss(Normalisation.MEAN_TOKEN) == 3.0
    assert OPTIONS[0].loss(Normalisation.PER_CHAR) == 1.5


def test_a_non_finite_loss_is_an_error_not_a_prediction():
    """min() over [nan, ...] returns whichever comes first; a NaN must never become a prediction."""
    import pytest

    from crossknow.errors import CrossknowError

    with pytest.raises(CrossknowError, match="item 7"):
        predict([OptionScore(float("nan"), 1, 1, 1), OptionScore(-2.0, 1, 1, 1)], Normalisation.SUM, item="item 7")
    with pytest.raises(CrossknowError):
        predict([OptionScore(-1.0, 1, 1, 1), OptionScore(float("-inf"), 1, 1, 1)], Normalisation.SUM)
