"""Sentence splitting (pysbd), Japanese-aware, shared by dataset generation and the training recipes.

pysbd's Japanese rules end sentences at 。！？ and keep quoted speech in 「」 whole. Line breaks inside a Japanese
paragraph are removed first (a hard-wrapped line would leave a space in a sentence), runs of whitespace in English
collapsed, and a blank line always ends a sentence.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from crossknow.errors import MissingDependencyError

PYSBD_LANGUAGES = frozenset(
    {"en", "hi", "mr", "zh", "es", "am", "ar", "hy", "bg", "ur", "ru", "pl", "fa", "nl", "da", "fr", "my", "el",
     "it", "ja", "de", "kk", "sk"}
)
"""Languages pysbd has rules for; others are split with the English rules."""

_NO_SPACE_LANGUAGES = frozenset({"ja", "zh"})
"""Languages written without spaces between words."""

MIN_SENTENCE_CHARS = 8
"""Shorter pieces (section numbers, stray punctuation) are not sentences ..."""
MIN_SENTENCE_CHARS_NO_SPACE = 6
"""... and in languages written without spaces, where a character carries more."""


@lru_cache(maxsize=8)
def _segmenter(lang: str) -> Any:
    try:
        import pysbd
    except ImportError as error:
        raise MissingDependencyError("pysbd", "text", "sentence splitting") from error
    return pysbd.Segmenter(language=lang if lang in PYSBD_LANGUAGES else "en", clean=False)


def _paragraphs(text: str, lang: str) -> list[str]:
    joiner = "" if lang in _NO_SPACE_LANGUAGES else " "
    paragraphs = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        if lines:
            paragraphs.append(re.sub(r"[ \t]+", " ", joiner.join(lines)))
    return paragraphs


def split_sentences(text: str, lang: str) -> list[str]:
    """The sentences of `text` in language `lang`, stripped; too short pieces dropped."""
    sentences = []
    shortest = MIN_SENTENCE_CHARS_NO_SPACE if lang in _NO_SPACE_LANGUAGES else MIN_SENTENCE_CHARS
    for paragraph in _paragraphs(text, lang):
        for piece in _segmenter(lang).segment(paragraph):
            piece = piece.strip()
            if len(piece) >= shortest:
                sentences.append(piece)
    return sentences




def join_sentences(sentences: list[str], lang: str) -> str:
    """Sentences joined as running text of `lang` (no space between them in Japanese and Chinese)."""
    return ("" if lang in _NO_SPACE_LANGUAGES else " ").join(sentences)
