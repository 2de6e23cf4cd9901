"""Sudachi's morphemes of a text: spans into the whole text, also across the pieces a long text is cut into."""

from __future__ import annotations

from crossknow.data.sudachi import SUDACHI_MAX_CHARS, morphemes


def test_morphemes_of_a_short_sentence() -> None:
    words = morphemes("猫が魚を食べた。")
    # Split mode C of the core dictionary: 猫 / が / 魚 / を / 食べ / た / 。 (a noun, particles, a verb stem).
    assert [w.surface for w in words] == ["猫", "が", "魚", "を", "食べ", "た", "。"]
    assert (words[4].lemma, words[4].pos[0]) == ("食べる", "動詞")
    assert [(w.begin, w.end) for w in words][:3] == [(0, 1), (1, 2), (2, 3)]


def test_a_long_text_is_cut_after_a_sentence_and_its_spans_stay_in_the_whole_text() -> None:
    sentence = "猫が魚を食べた。"
    text = sentence * (SUDACHI_MAX_CHARS // len(sentence) + 5)  # more than one piece
    assert len(text) > SUDACHI_MAX_CHARS
    words = morphemes(text)
    assert all(text[w.begin:w.end] == w.surface for w in words)
    assert [w.begin for w in words[1:]] == [w.end for w in words[:-1]]  # no gap, no overlap
    assert (words[0].begin, words[-1].end) == (0, len(text))
    # Cut after a '。', so every sentence is read whole: the same 7 morphemes each time.
    assert len(words) == 7 * (len(text) // len(sentence))
