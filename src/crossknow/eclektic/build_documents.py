"""The document collection a new ECLEKTIC-style set is built from, and the paper's filters (section 3.1).

One article a line of JSON:

    {"id": "he-4711", "lang": "he", "title": "...", "text": "...", "url": "https://...",
     "other_langs": {"en": "en-0815", "ar": "..."}}

`url` is optional. `other_langs` (optional, default none) maps a language code to the id of the same
article in that language, as Wikipedia's interlanguage links do: the id of that document when it is
in this collection, any identifier (e.g. its title) when it is not. Languages outside the chosen set
may be listed; they do not count. Availability is read both ways: a document also exists in language
L when a document of language L in the collection lists it under its own language.

The filters, in the paper's words "articles ... that contain at least 200 characters, had at least 100
views during 2023, and most importantly do not have equivalent articles in any of the other 11
languages", applied per language of the chosen set in this order (each document is counted at the
first filter that drops it): exists in another language of the set; shorter than `min_chars`
characters of text; no sentence (the context is the first sentences, see `context_of`); then a seeded
sample of `per_language` (the paper: 100). The views filter needs page-view statistics, which an
offline collection does not hold: it is not applied, and a collection filtered by views beforehand
gives the paper's selection.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from crossknow.data.jsonl import iter_json_lines, validation_problem
from crossknow.data.schemas import LanguageTag, Record
from crossknow.data.sentences import join_sentences, split_sentences
from crossknow.errors import InputError


class SourceDocument(Record):
    """One article of the collection."""

    id: str = Field(min_length=1, description="Document id, unique in the collection.")
    lang: LanguageTag = Field(description="Language of the article (ISO 639-1, e.g. 'he').")
    title: str = Field(min_length=1, description="The article's title, in its language.")
    text: str = Field(min_length=1, description="The article's text; its first sentences become the context.")
    url: str | None = Field(default=None, description="Where the article lives, when known.")
    other_langs: dict[LanguageTag, str] = Field(
        default_factory=dict,
        description="Language code -> id of the same article in that language (a document id of this "
        "collection, or any identifier of an article outside it).",
    )

    @field_validator("text", "title")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the value is blank")
        return value


@dataclass(frozen=True)
class SelectedDocument:
    """A document that passed every filter, with where it was read and the context drawn from it."""

    document: SourceDocument
    line: int
    """1-based line of the document in the collection file."""
    context: str
    """The document's first sentences, joined as running text of its language."""


class FilterCounts(BaseModel):
    """What the filters did to the documents of one language."""

    model_config = ConfigDict(extra="forbid")

    read: int = Field(description="Documents of this language in the collection.")
    in_other_languages: int = Field(description="Dropped: the article exists in another language of the set.")
    too_short: int = Field(description="Dropped: fewer characters of text than `min_chars`.")
    no_sentences: int = Field(description="Dropped: sentence splitting found no sentence (only documents the "
                                          "sample reached are split, so this counts those).")
    not_sampled: int = Field(description="Eligible, but beyond the `per_language` sample.")
    kept: int = Field(description="Documents a question is written from.")


def read_documents(path: str | Path) -> list[tuple[int, SourceDocument]]:
    """(line, document) for every article of the collection, in file order. InputError naming the file,
    line and field for a malformed record, a repeated id, or a document listing its own language."""
    documents: list[tuple[int, SourceDocument]] = []
    first_line: dict[str, int] = {}
    for line_no, record in iter_json_lines(path):
        try:
            document = SourceDocument.model_validate(record)
        except ValidationError as error:
            field, message = validation_problem(error)
            raise InputError(path, f"{message} (as a collection document)", line=line_no, field=field) from error
        if document.id in first_line:
            raise InputError(path, f"duplicate id {document.id!r}, first used on line {first_line[document.id]}",
                             line=line_no, field="id")
        if document.lang in document.other_langs:
            raise InputError(path, f"lists the document's own language {document.lang!r}", line=line_no,
                             field=f"other_langs.{document.lang}")
        first_line[document.id] = line_no
        documents.append((line_no, document))
    if not documents:
        raise InputError(path, "the collection holds no documents")
    return documents


def context_of(document: SourceDocument, n_sentences: int) -> str:
    """The first `n_sentences` sentences of the document (crossknow's sentence splitter, pysbd)."""
    return join_sentences(split_sentences(document.text, document.lang)[:n_sentences], document.lang)


def select_documents(
    documents: Sequence[tuple[int, SourceDocument]],
    languages: Sequence[str],
    *,
    min_chars: int,
    per_language: int,
    n_sentences: int,
    seed: int,
) -> tuple[list[SelectedDocument], dict[str, FilterCounts], int]:
    """(the selected documents in collection order, the counts per language of `languages`, the number
    of documents in other languages, which are ignored). The sample of a language is its eligible
    documents shuffled with `random.Random(f"{seed}:{lang}")`, taken in that order until
    `per_language` have a sentence."""
    chosen = set(languages)
    linked_from: dict[tuple[str, str], set[str]] = {}  # (id, lang) of a document -> languages linking to it
    for _, document in documents:
        if document.lang in chosen:
            for lang, other_id in document.other_langs.items():
                linked_from.setdefault((other_id, lang), set()).add(document.lang)

    def single_language(document: SourceDocument) -> bool:
        elsewhere = set(document.other_langs) | linked_from.get((document.id, document.lang), set())
        return not elsewhere & chosen

    outside = sum(1 for _, document in documents if document.lang not in chosen)
    counts: dict[str, FilterCounts] = {}
    selected: list[SelectedDocument] = []
    for lang in languages:
        own = [(line, d) for line, d in documents if d.lang == lang]
        single = [(line, d) for line, d in own if single_language(d)]
        long_enough = [(line, d) for line, d in single if len(d.text.strip()) >= min_chars]
        order = list(long_enough)
        random.Random(f"{seed}:{lang}").shuffle(order)
        taken, empty = [], 0
        for line, document in order:
            if len(taken) == per_language:
                break
            context = context_of(document, n_sentences)
            if context:
                taken.append(SelectedDocument(document, line, context))
            else:
                empty += 1
        counts[lang] = FilterCounts(
            read=len(own), in_other_languages=len(own) - len(single), too_short=len(single) - len(long_enough),
            no_sentences=empty, not_sampled=len(long_enough) - len(taken) - empty, kept=len(taken),
        )
        selected.extend(taken)
    selected.sort(key=lambda chosen_document: chosen_document.line)
    return selected, counts, outside
