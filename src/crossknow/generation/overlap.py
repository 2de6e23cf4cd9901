"""How much of one text another holds, counted in units that suit the script: words where words are spaced, character
bigrams in Japanese and Chinese (written without spaces). The generators' output checks (copies, echoes, grounding)
count overlap this way."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Literal

_WORD = re.compile(r"\w+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff66-\uff9f]")
"""Kana and CJK ideographs: text written without spaces between words."""
Unit = Literal["auto", "word", "character"]
"""What `units` splits into: words, single letters and digits, or (auto) words unless the text is Japanese or
Chinese, then character bigrams."""


def units(text: str, unit: Unit = "auto") -> list[str]:
    """The case-folded (NFKC) units of `text`, punctuation and spaces dropped: its words and numbers ("word"), its
    letters and digits one by one ("character"), or ("auto") its words unless it holds Japanese or Chinese script,
    then the character bigrams of each space-separated chunk (a chunk of one character as it is)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    if unit == "character":
        return [character for character in folded if character.isalnum()]
    if unit == "word" or not _CJK.search(folded):
        return _WORD.findall(folded)
    found: list[str] = []
    for chunk in folded.split():
        chars = [c for c in chunk if c.isalnum()]
        found += ["".join(pair) for pair in zip(chars, chars[1:], strict=False)] or chars
    return found


def longest_run(part: Sequence[str], whole: Sequence[str]) -> int:
    """The most consecutive units `part` shares with `whole`, in order."""
    if not part or not whole:
        return 0
    return SequenceMatcher(None, part, whole, autojunk=False).find_longest_match(0, len(part), 0, len(whole)).size


def is_stretch_of(text: str, source: str) -> bool:
    """True when the units of `text` occur in `source` consecutively and in order, none left out: `text` is a stretch
    of `source` (word boundaries respected: "a" is no stretch of "banana")."""
    said = units(text)
    return bool(said) and longest_run(said, units(source)) == len(said)


def share_in(text: str, source: str) -> float:
    """The share of the units of `text` that occur anywhere in `source`; 0 for a text without any."""
    said, theirs = units(text), set(units(source))
    return sum(unit in theirs for unit in said) / len(said) if said else 0.0
