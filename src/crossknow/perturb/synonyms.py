"""monosyn-X and mltsyn-X: words of a Japanese sequence replaced by synonyms in the same or the other language.

Candidates follow Appendix A.3.1: Sudachi morphemes (split mode C, crossknow's: the paper names none) that are no
stop word and have one of the paper's POS, read as the Sudachi tags that hold the same words (`KEPT_POS`: two of
the names are IPADIC's). The synonym (of the dictionary form, else the surface) replaces the word as written, and
the tokens covering the word are replaced by the tokens of their text with the word swapped.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from crossknow.data.guarded import iter_text_lines
from crossknow.data.sudachi import Morpheme, morphemes
from crossknow.perturb.edits import Edit
from crossknow.perturb.sampling import Source
from crossknow.perturb.synonym_dictionary import SynonymDictionary

KEPT_POS: dict[str, tuple[str, ...]] = {
    "サ変接続": ("名詞", "普通名詞", "サ変"),
    "普通名詞": ("名詞", "普通名詞"),
    "固有名詞": ("名詞", "固有名詞"),
    "形容動詞語幹": ("形状詞", "一般"),
    "動詞一般": ("動詞", "一般"),
}
"""The paper's POS names -> the Sudachi POS prefix that reads them (each element matches the start of the tag
at its place; サ変接続, the narrower, is tried before 普通名詞)."""
STOP_WORDS_JA: frozenset[str] = frozenset(
    "こと もの ため とき ところ ほう わけ はず まま うち ほか 場合 よう 中 上 下 前 後 間 際 方 点 等 "
    "他 者 人 時 数 日 年 月 回 件 的 化 性 以上 以下 以外 以前 以降 一方 全体 自体 同様 結果 目的 今回 本 当 "
    "各 両 思う 言う 行う 見る 用いる 得る".split()
)
"""crossknow's stop words: formal nouns and near-empty words of academic Japanese that pass the POS filter."""


def kept_tag(pos: tuple[str, ...]) -> str | None:
    """The paper's POS name that `pos` (Sudachi's tags) falls under, None when the filter drops it."""
    for name, prefix in KEPT_POS.items():
        if len(pos) >= len(prefix) and all(pos[k].startswith(tag) for k, tag in enumerate(prefix)):
            return name
    return None


def read_stop_words(path: str | Path | None) -> frozenset[str]:
    """The stop words of `path` (one a line, '#' comments), or crossknow's list when `path` is None."""
    if path is None:
        return STOP_WORDS_JA
    lines = (line.strip() for _, line in iter_text_lines(path))
    return frozenset(line for line in lines if line and not line.startswith("#"))


def candidate_words(text: str, stop_words: frozenset[str]) -> list[Morpheme]:
    """The morphemes of `text` that the POS filter keeps and that are no stop words (Appendix A.3.1)."""
    return [w for w in morphemes(text)
            if kept_tag(w.pos) and w.surface not in stop_words and w.lemma not in stop_words]


def _synonyms_of(word: Morpheme, dictionary: SynonymDictionary, lang: str, synonym_lang: str) -> tuple[str, ...]:
    found = dictionary.synonyms(word.lemma, lang, synonym_lang) or dictionary.synonyms(word.surface, lang, synonym_lang)
    return tuple(s for s in found if s != word.surface and not re.fullmatch(r"\s*", s))


def synonym_edits(
    source: Source, words: list[Morpheme], dictionary: SynonymDictionary, synonym_lang: str, rng: random.Random
) -> list[Edit]:
    """One edit per candidate word that has a synonym, words in `rng`'s order, each with a synonym drawn by `rng`."""
    text, offsets, ids = source.doc.text, source.offsets, source.ids
    edits = []
    for word in rng.sample(words, len(words)):
        synonyms = _synonyms_of(word, dictionary, source.doc.lang, synonym_lang)
        if not synonyms:
            continue
        synonym = rng.choice(synonyms)
        covering = [k for k, (start, end) in enumerate(offsets) if end > word.begin and start < word.end]
        if not covering:
            continue
        first, last = covering[0], covering[-1]
        piece = text[offsets[first][0]:word.begin] + synonym + text[word.end:offsets[last][1]]
        new = tuple(source.model.encode_piece(piece))
        if new == tuple(ids[first:last + 1]):
            continue
        slots = {first: new} | {k: () for k in range(first + 1, last + 1)}
        edits.append(Edit(slots, max(last + 1 - first, len(new))))
    return edits
