"""Per-token loss groups (section 5.2): script classes, POS alignment with the real taggers, and the mean loss
per group on a small table computed by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from crossknow.dynamics.token_groups import (
    char_script,
    group_summary,
    label_tokens,
    language_curves,
    span_script,
    token_group_table,
)
from crossknow.dynamics.token_pos import TaggedWord, english_words, japanese_words, sudachi_upos
from crossknow.errors import CrossknowError

# ---- script classes -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("char", "expected"), [
    ("あ", "japanese"), ("ア", "japanese"), ("ー", "japanese"), ("ｱ", "japanese"), ("漢", "japanese"),
    ("々", "japanese"), ("。", "japanese"), ("「", "japanese"), ("（", "japanese"), ("𠮷", "japanese"),
    ("a", "latin"), ("Z", "latin"), ("é", "latin"), ("ł", "latin"), ("Ａ", "latin"), ("ｚ", "latin"),
    ("7", "digit"), ("７", "digit"),
    (",", "other"), ("%", "other"), ("×", "other"), ("α", "other"), ("한", "other"), ("▁", "other"),
])
def test_each_character_has_its_class(char: str, expected: str) -> None:
    assert char_script(char) == expected


@pytest.mark.parametrize(("covered", "expected"), [
    (" world", "latin"),  # the leading space is ignored
    ("2019年", "digit"),  # four digits against one kanji
    ("年2", "japanese"),  # a tie: japanese comes first
    ("a1", "latin"),  # a tie: latin before digit
    ("(1", "digit"),  # a tie: digit before other
    ("、A", "japanese"),
    ("\n\n", "space"), ("\u3000", "space"),  # the ideographic space is whitespace
])
def test_a_token_takes_the_class_of_most_of_its_characters(covered: str, expected: str) -> None:
    assert span_script(covered) == expected


def test_empty_and_missing_spans() -> None:
    text = "日本 ok"
    spans = [(0, 2), (2, 2), (2, 3), (None, None), (3, 5)]
    # by hand: '日本'; an empty span (a byte token after the first) takes the token before it; ' ' is space;
    # no span: unaligned; 'ok' latin. No tagger: no POS.
    assert label_tokens(text, spans, None) == [("japanese", None), ("japanese", None), ("space", None),
                                               ("unaligned", None), ("latin", None)]
    assert label_tokens(text, [(0, 0)], None) == [("unaligned", None)]  # nothing before it to follow


# ---- POS alignment --------------------------------------------------------------------------------------------


def test_a_token_takes_the_word_it_overlaps_most() -> None:
    words = [TaggedWord(0, 3, "NOUN"), TaggedWord(3, 4, "ADP"), TaggedWord(5, 7, "VERB")]
    text = "abcd ef!"
    spans = [(0, 2), (2, 4), (1, 4), (3, 6), (4, 5), (7, 8)]
    # by hand: 'ab' in the noun; 'cd' one character each -> the earlier (NOUN); 'bcd' 2 noun vs 1 ADP -> NOUN;
    # 'd e' ADP 1, VERB 1 -> ADP; ' ' overlaps no word -> SPACE; '!' overlaps none and is no space -> X
    assert [tag for _, tag in label_tokens(text, spans, words)] == ["NOUN", "NOUN", "NOUN", "ADP", "SPACE", "X"]


@pytest.mark.parametrize(("pos", "expected"), [
    (("名詞", "数詞", "*", "*", "*", "*"), "NUM"),
    (("名詞", "固有名詞", "地名", "一般", "*", "*"), "PROPN"),
    (("名詞", "普通名詞", "サ変可能", "*", "*", "*"), "NOUN"),
    (("補助記号", "句点", "*", "*", "*", "*"), "PUNCT"),
    (("補助記号", "ＡＡ", "顔文字", "*", "*", "*"), "SYM"),
    (("助詞", "接続助詞", "*", "*", "*", "*"), "SCONJ"),
    (("助詞", "格助詞", "*", "*", "*", "*"), "ADP"),
    (("助詞", "終助詞", "*", "*", "*", "*"), "PART"),
    (("形状詞", "一般", "*", "*", "*", "*"), "ADJ"),
    (("連体詞", "*", "*", "*", "*", "*"), "DET"),
    (("未知", "*"), "X"),
])
def test_sudachi_tags_map_to_coarse_tags(pos: tuple[str, ...], expected: str) -> None:
    assert sudachi_upos(pos) == expected


def test_every_tag_of_the_sudachi_dictionary_has_a_coarse_tag() -> None:
    from sudachipy import Dictionary

    dictionary = Dictionary(dict="core")
    seen, index = set(), 0
    while (pos := dictionary.pos_of(index)) is not None:
        seen.add(tuple(pos))
        index += 1
    assert len(seen) > 1000
    assert [pos for pos in seen if sudachi_upos(pos) == "X"] == []


def test_japanese_tokens_by_script_and_pos() -> None:
    text = "2019年に東京大学の研究者がモデルを開発した。 次に"
    # spans as a subword tokenizer might cut the text (a token across words, a token inside one)
    tokens = ["2019", "年に", "東京", "大学の", "研究者", "がモデル", "を", "開発", "した", "。", " ", "次に"]
    spans, start = [], 0
    for token in tokens:
        spans.append((start, start + len(token)))
        start += len(token)
    assert start == len(text)
    # by hand, from Sudachi's words (2019 数詞 | 年 普通名詞 | に 格助詞 | 東京大学 固有名詞 | の | 研究者 | が |
    # モデル | を | 開発 サ変可能 | し 動詞 | た 助動詞 | 。 句点 | ' ' 空白 | 次 | に):
    expected = [("digit", "NUM"), ("japanese", "NOUN"), ("japanese", "PROPN"), ("japanese", "PROPN"),
                ("japanese", "NOUN"), ("japanese", "NOUN"), ("japanese", "ADP"), ("japanese", "NOUN"),
                ("japanese", "VERB"), ("japanese", "PUNCT"), ("space", "SPACE"), ("japanese", "NOUN")]
    assert label_tokens(text, spans, japanese_words(text)) == expected


@pytest.mark.slow
def test_english_tokens_by_script_and_pos() -> None:
    text = "In 2019, the model reached 92.5% accuracy.\n\nWe thank Dr. Smith!"
    tokens = ["In", " 2", "0", "1", "9", ",", " the", " model", " reached", " 9", "2", ".", "5", "%", " accuracy",
              ".", "\n\n", "We", " thank", " Dr", ".", " Smith", "!"]
    spans, start = [], 0
    for token in tokens:
        spans.append((start, start + len(token)))
        start += len(token)
    assert start == len(text)
    expected = [("latin", "ADP"), ("digit", "NUM"), ("digit", "NUM"), ("digit", "NUM"), ("digit", "NUM"),
                ("other", "PUNCT"), ("latin", "DET"), ("latin", "NOUN"), ("latin", "VERB"), ("digit", "NUM"),
                ("digit", "NUM"), ("other", "NUM"), ("digit", "NUM"), ("other", "NOUN"), ("latin", "NOUN"),
                ("other", "PUNCT"), ("space", "SPACE"), ("latin", "PRON"), ("latin", "VERB"), ("latin", "PROPN"),
                ("other", "PROPN"), ("latin", "PROPN"), ("other", "PUNCT")]
    # by hand: '92.5' is one number (its '.' too); spaCy tags '%' NOUN; 'Dr.' one proper noun
    assert label_tokens(text, spans, english_words(text)) == expected


# ---- aggregation ----------------------------------------------------------------------------------------------

TEXTS = {"j1": "東京でAI研究。", "j2": "研究。", "d1": "Ja 12."}
TOKENS = {  # variant -> (lang, [(start, end)], losses at step 0, losses at step 10)
    "j1": ("ja", [(0, 2), (2, 5), (5, 7), (7, 8)], [4.0, 6.0, 2.0, 1.0], [3.0, 2.0, 2.5, 0.5]),
    "j2": ("ja", [(0, 2), (2, 3)], [3.0, 2.0], [1.0, 1.5]),
    "d1": ("de", [(0, 2), (2, 5), (5, 6)], [3.0, 5.0, 0.5], [1.0, 4.0, 0.25]),
}


def token_table() -> pd.DataFrame:
    rows = []
    for step, losses_at in ((0, 2), (10, 3)):
        for variant_id, entry in TOKENS.items():
            for position, ((start, end), loss) in enumerate(zip(entry[1], entry[losses_at], strict=True)):
                rows.append({"step": step, "checkpoint": f"c{step}", "variant_id": variant_id, "lang": entry[0],
                             "position": position, "token_id": 0, "token_text": "", "char_start": start,
                             "char_end": end, "loss": loss})
    return pd.DataFrame(rows)


def test_mean_token_loss_per_step_language_and_group() -> None:
    table = token_group_table(token_table(), TEXTS)
    # groups by hand: j1 東京 japanese/PROPN, でAI latin (2 of 3 letters)/NOUN (AI), 研究 japanese/NOUN,
    # 。 japanese/PUNCT; j2 研究 japanese/NOUN, 。 japanese/PUNCT; d1 (no tagger) Ja latin, ' 12' digit, . other
    expected = [
        (0, "ja", "pos", "NOUN", (6 + 2 + 3) / 3, 3, 2), (10, "ja", "pos", "NOUN", (2 + 2.5 + 1) / 3, 3, 2),
        (0, "ja", "pos", "PROPN", 4.0, 1, 1), (10, "ja", "pos", "PROPN", 3.0, 1, 1),
        (0, "ja", "pos", "PUNCT", (1 + 2) / 2, 2, 2), (10, "ja", "pos", "PUNCT", (0.5 + 1.5) / 2, 2, 2),
        (0, "de", "script", "latin", 3.0, 1, 1), (10, "de", "script", "latin", 1.0, 1, 1),
        (0, "de", "script", "digit", 5.0, 1, 1), (10, "de", "script", "digit", 4.0, 1, 1),
        (0, "de", "script", "other", 0.5, 1, 1), (10, "de", "script", "other", 0.25, 1, 1),
        (0, "ja", "script", "japanese", (4 + 2 + 1 + 3 + 2) / 5, 5, 2),
        (10, "ja", "script", "japanese", (3 + 2.5 + 0.5 + 1 + 1.5) / 5, 5, 2),
        (0, "ja", "script", "latin", 6.0, 1, 1), (10, "ja", "script", "latin", 2.0, 1, 1),
    ]
    got = [(row.step, row.lang, row.kind, row.group, row.mean_loss, row.n_tokens, row.n_sequences)
           for row in table.itertuples()]
    assert [g[:4] + g[5:] for g in got] == [e[:4] + e[5:] for e in expected]
    assert [g[4] for g in got] == pytest.approx([e[4] for e in expected])

    summary = group_summary(table).set_index(["lang", "kind", "group"])
    assert summary.loc[("ja", "pos", "NOUN"), "change"] == pytest.approx(5.5 / 3 - 11 / 3)
    assert summary.loc[("de", "script", "digit"), ["first_loss", "last_loss", "min_step"]].tolist() == [5.0, 4.0, 10]


def test_bad_inputs_are_named() -> None:
    with pytest.raises(CrossknowError, match="no text for 1 scored sequence.*'d1'"):
        token_group_table(token_table(), {"j1": TEXTS["j1"], "j2": TEXTS["j2"]})
    with pytest.raises(CrossknowError, match="variant 'd1': token 1 covers characters 2:5 of a text of 3 "):
        token_group_table(token_table(), TEXTS | {"d1": "Ja "})
    shifted = token_table()
    shifted.loc[(shifted["step"] == 10) & (shifted["variant_id"] == "d1") & (shifted["position"] == 2),
                "char_start"] = 4
    with pytest.raises(CrossknowError, match="differs between checkpoints"):
        token_group_table(shifted, TEXTS)


def test_language_curves_average_the_originals() -> None:
    sequences = pd.DataFrame({
        "step": [0, 0, 0, 0, 5, 5, 5, 5],
        "variant_id": ["e1", "e2", "j1", "e1-mask", "e1", "e2", "j1", "e1-mask"],
        "lang": ["en", "en", "ja", "en"] * 2,
        "method": ["original", "original", "original", "mask"] * 2,
        "loss": [2.0, 4.0, 5.0, 9.0, 1.0, 2.0, 6.0, 9.0],
    })
    curves = language_curves(sequences)
    assert curves[["step", "lang", "n_sequences"]].values.tolist() == [[0, "en", 2], [5, "en", 2], [0, "ja", 1],
                                                                       [5, "ja", 1]]
    assert curves["mean_loss"].tolist() == pytest.approx([3.0, 1.5, 5.0, 6.0])  # the mask variant left out
