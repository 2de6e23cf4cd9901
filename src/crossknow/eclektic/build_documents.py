"""The document collection a new ECLEKTIC-style set is built from, and the paper's two selections (docs/eclektic.md).

One article a line: `id`, `lang`, `title`, `text`, and optionally `url`, `views` and `other_langs` (language -> id of
the same article, as Wikipedia's interlanguage links, read both ways). "single_language" (the main set, section 3.1)
and "popular" (section 5) filter per language, counting each document at the first filter that drops it; a selected
document records the languages that lack its article (`missing_in`), into which its question is translated.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

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
    views: int | None = Field(default=None, ge=0, description="Page views over the period the selection is "
                              "about (the paper: 2023 for the main set, April 2023 for popular pages); None when "
                              "unknown.")

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
    missing_in: tuple[str, ...]
    """The languages of the set that lack the article, in the set's order: its question's target languages."""


Selection = Literal["single_language", "popular"]
"""Which articles a build takes: the main set's (single-language) or popular pages' (see the module docstring)."""


class FilterCounts(BaseModel):
    """What the filters did to the documents of one language."""

    model_config = ConfigDict(extra="forbid")

    read: int = Field(description="Documents of this language in the collection.")
    in_other_languages: int = Field(description="Dropped: the article exists in another language of the set "
                                    "(popular pages: in every other language of the set).")
    too_few_views: int = Field(description="Dropped: fewer known views than `min_views` (the main set only).")
    views_unknown: int = Field(description="Kept by the views filter because the document has no `views` (the main "
                                           "set only; popular pages need them).")
    too_short: int = Field(description="Dropped: fewer characters of text than `min_chars`.")
    no_sentences: int = Field(description="Dropped: sentence splitting found no sentence (only documents the "
                                          "sample reached are split, so this counts those).")
    not_sampled: int = Field(description="Eligible, but beyond the `per_language` sample (popular pages: beyond "
                                         "the `per_language` most viewed).")
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
    selection: Selection = "single_language",
    min_views: int = 0,
    path: str | Path = "<collection>",
) -> tuple[list[SelectedDocument], dict[str, FilterCounts], int]:
    """(the selected documents in collection order, the counts per language of `languages`, the number
    of documents in other languages, which are ignored), under `selection` (see the module docstring).

    "single_language" samples a language's eligible documents shuffled with
    `random.Random(f"{seed}:{lang}")`; "popular" takes them by views, most first, ties in collection
    order. Either takes them in that order until `per_language` have a sentence. InputError (naming
    `path`, the line and `views`) for a popular-pages candidate without views."""
    chosen = set(languages)
    linked_from: dict[tuple[str, str], set[str]] = {}  # (id, lang) of a document -> languages linking to it
    for _, document in documents:
        if document.lang in chosen:
            for lang, other_id in document.other_langs.items():
                linked_from.setdefault((other_id, lang), set()).add(document.lang)

    def missing_in(document: SourceDocument) -> tuple[str, ...]:
        elsewhere = set(document.other_langs) | linked_from.get((document.id, document.lang), set())
        return tuple(lang for lang in languages if lang != document.lang and lang not in elsewhere)

    def candidate(document: SourceDocument) -> bool:
        missing = missing_in(document)
        return len(missing) == len(languages) - 1 if selection == "single_language" else bool(missing)

    outside = sum(1 for _, document in documents if document.lang not in chosen)
    counts: dict[str, FilterCounts] = {}
    selected: list[SelectedDocument] = []
    for lang in languages:
        own = [(line, d) for line, d in documents if d.lang == lang]
        candidates = [(line, d) for line, d in own if candidate(d)]
        if selection == "popular":
            for line, document in candidates:
                if document.views is None:
                    raise InputError(path, "popular pages are ranked by views: every candidate needs them",
                                     line=line, field="views")
            viewed, unknown = candidates, 0
        else:
            viewed = [(line, d) for line, d in candidates if d.views is None or d.views >= min_views]
            unknown = sum(1 for _, d in candidates if d.views is None)
        long_enough = [(line, d) for line, d in viewed if len(d.text.strip()) >= min_chars]
        order = list(long_enough)
        if selection == "popular":
            order.sort(key=lambda pair: -(pair[1].views or 0))  # stable: ties stay in collection order
        else:
            random.Random(f"{seed}:{lang}").shuffle(order)
        taken, empty = [], 0
        for line, document in order:
            if len(taken) == per_language:
                break
            context = context_of(document, n_sentences)
            if context:
                taken.append(SelectedDocument(document, line, context, missing_in(document)))
            else:
                empty += 1
        counts[lang] = FilterCounts(
            read=len(own), in_other_languages=len(own) - len(candidates), too_few_views=len(candidates) - len(viewed),
            views_unknown=unknown, too_short=len(viewed) - len(long_enough), no_sentences=empty,
            not_sampled=len(long_enough) - len(taken) - empty, kept=len(taken),
        )
        selected.extend(taken)
    selected.sort(key=lambda chosen_document: chosen_document.line)
    return selected, counts, outside
