"""The one rule for a shot echo (`generation.echo`): an output repeats an example's output as a whole, or a long run of
it that the prompt's inputs do not hold; a word of an example is no echo."""

from __future__ import annotations

import pytest

from crossknow.generation.echo import ECHO_SPAN, echoed_example, folded, holds

SHOT = "Every living cell in a leaf also needs air to stay alive."


def test_texts_are_compared_folded():
    assert folded("  Le point d'ébullition de l'EAU. ") == "le point d ébullition de l eau"
    assert folded("水の沸点は何度ですか？") == "水の沸点は何度ですか"
    assert holds("What is the boiling point of water?", "the Boiling point of water") and not holds("x", "")


@pytest.mark.parametrize(("output", "expected"), [
    ("every living cell in a leaf also needs air to stay alive", SHOT),  # whole, case and period aside
    ("Plants know every living cell in a leaf also needs it.", SHOT),  # a run of 38 characters
    ("Oxygen is carried by red blood cells to every part of the body.", None),
    ("A leaf cell needs air to live.", None),  # shared runs shorter than ECHO_SPAN
    ("", None),
])
def test_an_output_echoes_an_example_whole_or_by_a_long_run(output, expected):
    assert echoed_example(output, [SHOT, "a small wooden boat"]) == expected


def test_the_run_is_long_enough_at_echo_span_characters_and_not_below():
    shot = "abcdefghij klmnopqrstuvwxyz"
    assert echoed_example("zz " + shot[:ECHO_SPAN] + " zz", [shot]) == shot
    assert echoed_example("zz " + shot[: ECHO_SPAN - 1] + " zz", [shot]) is None


def test_what_an_input_holds_is_no_echo():
    assert echoed_example("in a leaf also needs air to stay alive", [SHOT], sources=("in a leaf also needs air to "
                                                                                  "stay alive",)) is None
    assert echoed_example("cast iron", ["cast iron"], sources=("The old bridge was built of cast iron.",)) is None


def test_whole_outputs_only_and_lists_in_any_order():
    assert echoed_example("iron", ["cast iron"], span=None) is None  # a word of an example's output
    assert echoed_example("Cast iron.", ["cast iron"], span=None) == "cast iron"
    assert echoed_example(["Uranus", "saturn", "Neptune"], [["Saturn", "Neptune", "Uranus"]], span=None) == \
        "Saturn, Neptune, Uranus"
    assert echoed_example(["Saturn", "Mars", "Venus"], [["Saturn", "Neptune", "Uranus"]], span=None) is None
    assert echoed_example(["cast iron"], ["cast iron"], span=None) == "cast iron"  # one option is a one-part list
