"""Reading-comprehension instructions mined from a document and its metadata (Appendix A.4.1).

One template per type is drawn for each document with a generator seeded by (seed, document id, type), so adding
or removing a document never changes the others' draws. A type is built only when the document has what it
needs (the types, their inputs and outputs: docs/adaxeval.md); the abstract is metadata.abstract, else the text.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from crossknow.data.sentences import join_sentences, split_sentences
from crossknow.errors import CrossknowError
from crossknow.training.templates import TemplateTable, fill

INSTRUCTION_TYPES = (
    "summarisation", "keyword_extraction", "field_identification", "translation", "text_completion",
    "conclusion_derivation", "background_derivation", "diagnosis", "reordering", "gmrc",
)
"""The ten reading-comprehension types of Appendix A.4.1, in the paper's order."""

LANGUAGE_WORDS: dict[str, dict[str, str]] = {
    "en": {"en": "English", "ja": "Japanese"},
    "ja": {"en": "英語", "ja": "日本語"},
}
"""LANGUAGE_WORDS[written in][language]: language names as an instruction in that language writes them."""

SECTION_NAMES: dict[str, dict[str, str]] = {
    "en": {"goal": "goal", "method": "method", "result": "result", "conclusion": "conclusion"},
    "ja": {"goal": "目的", "method": "方法", "result": "結果", "conclusion": "結論"},
}
"""Names of the four parts of a structured abstract (GMRC), per document language."""

LIST_SEPARATORS: dict[str, str] = {"en": ", ", "ja": "、"}
"""How keywords and fields are joined, per document language."""

GMRC_PARTS = ("goal", "method", "result", "conclusion")


@dataclass(frozen=True)
class Instruction:
    """One instruction text built from one document."""

    type: str
    """Instruction type (one of INSTRUCTION_TYPES)."""
    template_index: int
    """Which of the type's templates was drawn."""
    text: str
    """The complete training text: instruction, input and expected output."""


def _table_word(table: dict[str, dict[str, str]], lang: str, name: str) -> dict[str, str]:
    if lang not in table:
        raise CrossknowError(f"no {name} for language {lang!r} (has: {', '.join(table)}); add them to extend it")
    return table[lang]


def _listed(value: Any, lang: str) -> str | None:
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, list) and value:
        return _table_word(LIST_SEPARATORS, lang, "list separator").join(str(v) for v in value)
    return None


def _values(type_: str, doc: Any, partner: Any | None, rng: random.Random) -> dict[str, str] | None:
    """Placeholder values for `type_`, or None when the document lacks what the type needs."""
    meta, lang = doc.metadata, doc.lang
    abstract = meta.get("abstract") or doc.text
    sentences = split_sentences(doc.text, lang)
    sections = meta.get("sections") or {}
    if type_ == "summarisation":
        return {"abstract": abstract, "title": meta["title"]} if meta.get("title") else None
    if type_ in ("keyword_extraction", "field_identification"):
        key = "keywords" if type_ == "keyword_extraction" else "fields"
        listed = _listed(meta.get(key), lang)
        return {"abstract": abstract, key: listed} if listed else None
    if type_ == "translation":
        if partner is None:
            return None
        names = _table_word(LANGUAGE_WORDS, lang, "language names")
        return {"source_lang": names[lang], "target_lang": names[partner.lang], "source": doc.text,
                "target": partner.text}
    if type_ == "text_completion":
        if len(sentences) < 2:
            return None
        half = len(sentences) // 2
        return {"partial": join_sentences(sentences[:half], lang), "remainder": join_sentences(sentences[half:], lang)}
    if type_ == "conclusion_derivation":
        if sections.get("conclusion"):
            return {"context": abstract, "conclusion": sections["conclusion"]}
        if len(sentences) < 3:
            return None
        return {"context": join_sentences(sentences[:-1], lang), "conclusion": sentences[-1]}
    if type_ == "background_derivation":
        if sections.get("background"):
            return {"context": abstract, "background": sections["background"]}
        if len(sentences) < 3:
            return None
        return {"context": join_sentences(sentences[1:], lang), "background": sentences[0]}
    if type_ == "diagnosis":
        if not (meta.get("symptoms") and meta.get("diagnosis")):
            return None
        return {"symptoms": meta["symptoms"], "diagnosis": meta["diagnosis"]}
    if type_ == "reordering":
        if len(sentences) < 3:
            return None
        order = list(range(len(sentences)))
        while order == sorted(order):
            rng.shuffle(order)
        numbered = "\n".join(f"{n}. {sentences[i]}" for n, i in enumerate(order, start=1))
        return {"shuffled": numbered, "ordered": join_sentences(sentences, lang)}
    if type_ == "gmrc":
        if not all(sections.get(part) for part in GMRC_PARTS):
            return None
        names = _table_word(SECTION_NAMES, lang, "section names")
        missing = rng.choice(GMRC_PARTS)
        given = "\n".join(f"{names[p]}: {sections[p]}" for p in GMRC_PARTS if p != missing)
        return {"given": given, "missing_name": names[missing], "missing": sections[missing]}
    raise ValueError(f"unknown instruction type {type_!r}")


def reading_comprehension(
    doc: Any, partner: Any | None, table: TemplateTable, seed: int, types: tuple[str, ...] = INSTRUCTION_TYPES
) -> list[Instruction]:
    """Every instruction of `types` that `doc` (with its translation `partner`, if any) allows.

    The template of each type is drawn with `random.Random(f"{seed}:{doc.id}:{type}")`.
    """
    built = []
    for type_ in types:
        rng = random.Random(f"{seed}:{doc.id}:{type_}")
        values = _values(type_, doc, partner, rng)
        if values is None:
            continue
        picked = table.pick(type_, doc.lang, rng)
        built.append(Instruction(type_, picked.index, fill(picked, values)))
    return built
