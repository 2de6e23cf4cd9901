"""Sentence splitting for English and Japanese (pysbd), shared by dataset generation and training recipes."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from crossknow.errors import MissingDependencyError

JOINERS: dict[str, str] = {"en": " ", "ja": ""}
"""How sentences of a language are joined back into running text."""


@lru_cache(maxsize=8)
def _segmenter(lang: str) -> Any:
    try:
        import pysbd
    except ImportError as error:
        raise MissingDependencyError("pysbd", "text", "sentence splitting") from error
    return pysbd.Segmenter(language=lang, clean=False)


def split_sentences(text: str, lang: str) -> list[str]:
    """The sentences of `text` in language `lang` (ISO 639-1), stripped, empty ones dropped."""
    return [sentence.strip() for sentence in _segmenter(lang).segment(text) if sentence.strip()]


def join_sentences(sentences: list[str], lang: str) -> str:
    """Sentences joined as running text of `lang` (a space between English sentences, none in Japanese)."""
    return JOINERS.get(lang, " ").join(sentences)
