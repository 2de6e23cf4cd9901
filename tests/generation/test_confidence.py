"""yes_probability on constructed token lists (how the value's token is found and how mass is summed), and
the exact P(yes) of two scored values."""

from __future__ import annotations

import math

import pytest

from crossknow.generation.confidence import (
    answer_probability,
    calibrated_yes_probability,
    classify,
    scored_yes_probability,
    value_prefix,
    value_token_index,
    yes_probability,
    yes_probability_from_tokens,
)
from crossknow.models.generator import TokenAlternatives

ln = math.log


def tokens(*pieces: str, at: str | None = None, top: tuple = ()) -> list[TokenAlternatives]:
    """TokenAlternatives for `pieces`; the piece equal to `at` gets the alternatives `top`."""
    out = []
    for piece in pieces:
        alternatives = top if piece == at else ((piece, -0.01),)
        chosen = next((lp for text, lp in alternatives if text == piece), -0.01)
        out.append(TokenAlternatives(token=piece, logprob=chosen, top=tuple(alternatives)))
    return out


def test_separate_quote_token_is_skipped():
    # what llama.cpp produced for {"factuality": "yes"}: the opening quote is its own token
    pieces = ["{", ' "', "f", "act", "uality", '":', ' "', "yes", '"', "}"]
    top = (("yes", ln(0.5)), ("Yes", ln(0.1)), ("no", ln(0.3)), ("Paris", ln(0.05)))
    assert value_token_index(pieces, "factuality") == (7, "")
    value = yes_probability_from_tokens(tokens(*pieces, at="yes", top=top), "factuality")
    assert value == pytest.approx(0.6 / 0.9)


def test_value_inside_a_token_with_a_prefix():
    pieces = ['{"factuality', '": "no', '", "reason": "x"}']
    top = (('": "no', ln(0.7)), ('": "yes', ln(0.2)), ('": "', ln(0.05)))
    assert value_token_index(pieces, "factuality") == (1, '": ')  # the value starts at its quote
    value = yes_probability_from_tokens(tokens(*pieces, at='": "no', top=top), "factuality")
    assert value == pytest.approx(0.2 / 0.9)


def test_only_yes_present_gives_its_raw_mass_and_none_gives_zero():
    pieces = ['{"factuality": "', "yes", '"}']
    only_yes = (("yes", ln(0.27)), ("Paris", ln(0.4)), ("true", ln(0.1)))
    assert yes_probability_from_tokens(tokens(*pieces, at="yes", top=only_yes), "factuality") == pytest.approx(0.27)
    only_no = (("no", ln(0.5)), ("No", ln(0.2)))
    assert yes_probability_from_tokens(tokens(*["{\"factuality\": \"", "no", "\"}"], at="no", top=only_no),
                                       "factuality") == 0.0


def test_chosen_token_counts_when_missing_from_the_list():
    pieces = ['{"factuality": "', "yes", '"}']
    alternatives = tokens(*pieces, at="yes", top=(("no", ln(0.4)),))
    alternatives[1] = TokenAlternatives(token="yes", logprob=ln(0.2), top=(("no", ln(0.4)),))
    assert yes_probability_from_tokens(alternatives, "factuality") == pytest.approx(0.2 / 0.6)


def test_words_that_merely_start_with_no_are_not_no():
    assert [classify(w) for w in ['"no', " No", 'no"}', "none", "not", "nothing", "Yes", "yesss", "maybe"]] == [
        "no", "no", "no", None, None, None, "yes", "yes", None
    ]


def test_located_in_a_fenced_answer_with_the_field_second():
    pieces = ["```json\n", '{"reason": "ok", ', '"factuality"', ": ", '"', "YES", '"}', "\n```"]
    top = (("YES", ln(0.3)), ("NO", ln(0.3)), ("no", ln(0.2)))
    value = yes_probability(tokens(*pieces, at="YES", top=top), "factuality", answer="YES")
    assert value == pytest.approx(0.3 / 0.8)


def test_fallbacks_to_the_parsed_answer():
    assert yes_probability(None, "factuality", "yes") == 1.0
    assert yes_probability((), "factuality", "No") == 0.0
    assert yes_probability(None, "factuality", True) == 1.0
    assert yes_probability(None, "factuality", "unsure") is None
    assert yes_probability(None, "factuality", None) is None
    # logprobs given, but the field is not in them (another field name): the answer decides
    assert yes_probability(tokens('{"other": "yes"}'), "factuality", "no") == 0.0
    assert answer_probability(3) is None


def test_value_at_the_end_or_missing():
    assert value_token_index(['{"factuality": '], "factuality") is None
    assert value_token_index(['{"factuality": "', '"'], "factuality") is None
    assert value_token_index([], "factuality") is None


def test_result_is_a_probability():
    pieces = ['{"factuality": "', "yes", '"}']
    rounding = (("yes", 0.0), ("Yes", -1e-9))  # masses that sum past 1
    assert yes_probability_from_tokens(tokens(*pieces, at="yes", top=rounding), "factuality") == 1.0
    with_inf = (("yes", float("-inf")), ("no", 0.0))
    assert yes_probability_from_tokens(tokens(*pieces, at="yes", top=with_inf), "factuality") == 0.0


def test_value_prefix_ends_where_the_value_starts():
    assert value_prefix('{"factuality": "yes", "reason": "x"}', "factuality") == '{"factuality": '
    assert value_prefix('{"reason": "a", "factuality" :"no"}', "factuality") == '{"reason": "a", "factuality" :'
    assert value_prefix('{"reason": "factuality"}', "factuality") is None


def test_scored_yes_probability_normalises_over_the_two_values():
    assert scored_yes_probability(ln(0.3), ln(0.1)) == pytest.approx(0.75)
    assert scored_yes_probability(-1.0, -1.0) == 0.5
    assert scored_yes_probability(-2000.0, -1.0) == 0.0 and scored_yes_probability(-1.0, -2000.0) == 1.0


def test_calibration_divides_out_the_content_free_lean():
    # Zhao et al.'s rule by hand: (0.3 / 0.2) / (0.3 / 0.2 + 0.7 / 0.8) = 1.5 / 2.375
    assert calibrated_yes_probability(0.3, 0.2) == pytest.approx(1.5 / 2.375)
    assert calibrated_yes_probability(0.65, 0.65) == pytest.approx(0.5)  # no more than the prompt's own lean
    assert calibrated_yes_probability(0.3, 0.5) == pytest.approx(0.3)  # an even prompt changes nothing
    # the order of two inputs is kept, whatever the lean
    assert calibrated_yes_probability(0.2, 0.9) < calibrated_yes_probability(0.25, 0.9) < 0.5
    # a certain answer, or a lean of 0 or 1, is left as it is
    assert calibrated_yes_probability(1.0, 0.3) == 1.0 and calibrated_yes_probability(0.4, 0.0) == 0.4
