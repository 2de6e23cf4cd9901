"""Corpus files: JSON lines of documents, the input of dataset generation and of training.

One document a line, `{"id", "lang", "text", "metadata": {"title", "abstract", "keywords", "fields", "pair_id", ...}}`,
`metadata` optional and kept whole; a bilingual pair is two documents in different languages with one `pair_id`.
`read_corpus` reads every document in file order (InputError for a malformed line, a duplicate id, a second document
of one language in a pair); `pair_documents` gives the complete pairs over `langs` and the documents left unpaired.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator

from crossknow.data.jsonl import iter_json_lines, validation_problem
from crossknow.data.schemas import LanguageTag, Record
from crossknow.errors import InputError

_KNOWN_METADATA: dict[str, tuple[type, str]] = {
    "title": (str, "a string"),
    "abstract": (str, "a string"),
    "pair_id": (str, "a string"),
    "keywords": (list, "a list of strings"),
    "fields": (list, "a list of strings"),
}
"""Metadata keys with a fixed type: key -> (type, how an error names it)."""


class Document(Record):
    """One corpus document."""

    id: str = Field(min_length=1, description="Document id, unique in the corpus.")
    lang: LanguageTag = Field(description="Language of `text` (a language tag, e.g. 'en', 'ja').")
    text: str = Field(min_length=1, description="The document's text (e.g. an abstract).")
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="Optional title, abstract, keywords, fields and pair_id (shared by the translations of "
        "one document); other keys are kept unchanged.",
    )

    @field_validator("text")
    @classmethod
    def _not_blank(cls, text: str) -> str:
        if not text.strip():
            raise ValueError("the text is empty")
        return text

    @field_validator("metadata")
    @classmethod
    def _known_keys(cls, metadata: dict[str, Any]) -> dict[str, Any]:
        for key, (kind, name) in _KNOWN_METADATA.items():
            value = metadata.get(key)
            if value is None:
                continue
            if not isinstance(value, kind) or (kind is list and not all(isinstance(v, str) for v in value)):
                raise ValueError(f"metadata.{key} must be {name}")
            if key == "pair_id" and not value.strip():
                raise ValueError("metadata.pair_id is empty")
        return metadata

    @property
    def pair_id(self) -> str | None:
        """The id shared by this document and its translations, if any."""
        return self.metadata.get("pair_id")


@dataclass
class CorpusPairs:
    """Documents grouped into complete pairs over some languages, and the ones left over."""

    langs: tuple[str, ...]
    """The languages every pair holds."""
    pairs: dict[str, dict[str, Document]] = field(default_factory=dict)
    """pair_id -> {lang: document}, with a document in every one of `langs`; in corpus order."""
    unpaired: list[Document] = field(default_factory=list)
    """Documents in `langs` without a pair_id or without a partner in every other language of `langs`."""
    other_langs: int = 0
    """Documents in languages outside `langs` (ignored)."""


def read_corpus(path: str | Path) -> list[Document]:
    """Every document of a JSON-lines corpus, in file order.

    Raises InputError naming the file, line and field for a line that is not a valid document, a
    document id seen before, or a second document of the same language under one pair_id.
    """
    documents: list[Document] = []
    id_lines: dict[str, int] = {}
    pair_lines: dict[tuple[str, str], int] = {}
    for line_no, record in iter_json_lines(path):
        try:
            document = Document.model_validate(record)
        except ValidationError as error:
            where, message = validation_problem(error)
            named = re.match(r"(metadata\.\w+) ", message)
            where = named.group(1) if named else where
            raise InputError(path, f"{message} (as a corpus document)", line=line_no, field=where) from error
        if document.id in id_lines:
            raise InputError(
                path, f"duplicate document id {document.id!r}, first used on line {id_lines[document.id]}",
                line=line_no, field="id",
            )
        id_lines[document.id] = line_no
        if document.pair_id is not None:
            slot = (document.pair_id, document.lang)
            if slot in pair_lines:
                raise InputError(
                    path,
                    f"a second {document.lang!r} document for pair {document.pair_id!r} "
                    f"(the first is on line {pair_lines[slot]})",
                    line=line_no, field="metadata.pair_id",
                )
            pair_lines[slot] = line_no
        documents.append(document)
    return documents


def pair_documents(documents: Sequence[Document], langs: Sequence[str]) -> CorpusPairs:
    """Group `documents` into pairs holding one document in each of `langs` (pairs in the order
    their first document appears); report the rest as unpaired."""
    wanted = tuple(langs)
    grouped: dict[str, dict[str, Document]] = {}
    result = CorpusPairs(langs=wanted)
    for document in documents:
        if document.lang not in wanted:
            result.other_langs += 1
        elif document.pair_id is None:
            result.unpaired.append(document)
        else:
            grouped.setdefault(document.pair_id, {})[document.lang] = document
    for pair_id, members in grouped.items():
        if all(lang in members for lang in wanted):
            result.pairs[pair_id] = {lang: members[lang] for lang in wanted}
        else:
            result.unpaired.extend(members.values())
    order = {document.id: index for index, document in enumerate(documents)}
    result.unpaired.sort(key=lambda document: order[document.id])
    return result
