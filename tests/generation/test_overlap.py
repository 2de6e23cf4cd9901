"""Overlap in script-aware units (`generation.overlap`): words where words are spaced, character bigrams in Japanese
and Chinese; a stretch respects word boundaries."""

from __future__ import annotations

from crossknow.generation.overlap import is_stretch_of, longest_run, share_in, units


def test_units_are_words_or_character_bigrams():
    assert units("The  Bridge, 1890!") == ["the", "bridge", "1890"]
    assert units("清水寺の本堂") == ["清水", "水寺", "寺の", "の本", "本堂"]
    assert units("橋") == ["橋"]
    assert units("ＡＢＣ") == ["abc"]  # NFKC: full-width letters are the same word


def test_a_stretch_keeps_word_boundaries_and_order():
    assert is_stretch_of("the bridge", "Who built the bridge?")
    assert is_stretch_of("a", "a banana is yellow")  # a whole word is a stretch
    assert not is_stretch_of("ana", "a banana")  # inside a word is no stretch
    assert not is_stretch_of("bridge the", "Who built the bridge?")  # order counts
    assert not is_stretch_of("", "anything")
    assert longest_run(["a", "b", "c"], ["x", "b", "c", "a"]) == 2


def test_share_counts_units_anywhere():
    assert share_in("a banana", "a bridge") == 0.5
    assert share_in("", "a bridge") == 0.0
