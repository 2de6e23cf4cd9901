"""Japanese morphemes by sudachipy: its core dictionary, split mode C, long texts analysed piece by piece.

`crossknow perturb` reads Japanese with it for the synonym perturbations (Appendix A.3.1) and `crossknow
trace-sequences` for the per-token POS groups, so both see the same morphemes. The paper names no split
mode; C (sudachipy's default, the longest units) is crossknow's choice there. The heuristic NER of
`crossknow generate` asks for mode A (the shortest units), which it joins into noun runs itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from crossknow.errors import MissingDependencyError

SUDACHI_MAX_CHARS = 10_000
"""Text is analysed in pieces of at most this many characters (sudachipy refuses inputs over about 49 KB),
cut after a line break or '。' where one falls inside the piece."""


@dataclass(frozen=True)
class Morpheme:
    """One morpheme of a text."""

    surface: str
    """The text as written."""
    lemma: str
    """Its dictionary form."""
    begin: int
    """First character in the text."""
    end: int
    """One past its last character."""
    pos: tuple[str, ...]
    """Sudachi's POS tags (UniDic-style, e.g. ('名詞', '普通名詞', '一般', '*', '*', '*'))."""


@lru_cache(maxsize=3)
def _tokenizer(mode: str) -> Any:
    try:
        from sudachipy import Dictionary, SplitMode
    except ImportError as error:
        raise MissingDependencyError("sudachipy", "text", "Japanese morphological analysis (Sudachi)") from error
    try:
        return Dictionary(dict="core").tokenizer(mode=getattr(SplitMode, mode))
    except Exception as error:  # the dictionary package missing or broken
        raise MissingDependencyError("sudachidict-core", "text", "Japanese morphological analysis (Sudachi)") \
            from error


def _pieces(text: str) -> Iterator[tuple[int, str]]:
    """(start, piece) of `text` cut after a line break or '。' so that no piece exceeds SUDACHI_MAX_CHARS."""
    start = 0
    while start < len(text):
        end = min(len(text), start + SUDACHI_MAX_CHARS)
        if end < len(text):
            cut = max(text.rfind("\n", start, end), text.rfind("。", start, end))
            end = cut + 1 if cut >= start else end
        yield start, text[start:end]
        start = end


def morphemes(text: str, mode: Literal["A", "B", "C"] = "C") -> list[Morpheme]:
    """The morphemes of `text` in split `mode` (C: the longest units), in order, with their character spans
    in `text`; whitespace morphemes (空白) included."""
    tokenizer = _tokenizer(mode)
    return [
        Morpheme(m.surface(), m.dictionary_form(), start + m.begin(), start + m.end(), tuple(m.part_of_speech()))
        for start, piece in _pieces(text) for m in tokenizer.tokenize(piece)
    ]
