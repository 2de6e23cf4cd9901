"""The interlingual pairing that `crossknow generate` writes beside its sets: `dataset/interlingual.jsonl`.

One link a line: an item of language X, the document in X it was generated from, and the same pair's document in
language Y, so that a model trained on Y documents meets X items (the paper's interlingual generalisation, section
3.1.2). `generate` writes it and `trace` reads it; both sit above this module, which is why the record lives here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, ValidationError, model_validator

from crossknow.data.jsonl import iter_json_lines, validation_problem
from crossknow.data.schemas import LanguageTag, Record
from crossknow.errors import InputError

INTERLINGUAL_FILE = "interlingual.jsonl"
"""The pairing's file name, in the dataset directory above the per-language set directories."""

PairingKey = tuple[str, str]
"""(language, item id as the set file writes it) of a linked item."""


class InterlingualLink(Record):
    """One line of interlingual.jsonl."""

    item_id: str = Field(description="Id of the item in its language's sets.")
    lang: LanguageTag = Field(description="Language X of the item (and of the document its fact was taken from).")
    doc_id: str = Field(description="The document in X the item was generated from.")
    pair_id: str = Field(description="The pair both documents belong to.")
    partner_lang: LanguageTag = Field(description="Language Y of the paired document (another language than X).")
    partner_doc_id: str = Field(description="The paired document in Y.")
    support: Annotated[int, Field(ge=0, le=2, strict=True)] | None = Field(
        description="Cross-language judgement: 2 stated, 1 inferable, 0 not supported."
    )

    @model_validator(mode="after")
    def _two_languages(self) -> InterlingualLink:
        if self.partner_lang == self.lang:
            raise ValueError(f"partner_lang {self.partner_lang!r} is the item's own language: a link joins two")
        return self


def read_pairing(path: str | Path) -> dict[PairingKey, InterlingualLink]:
    """Every link of an interlingual.jsonl by (lang, item_id); a malformed line, or an item linked twice, is an
    InputError naming the file, the line and the field."""
    links: dict[PairingKey, InterlingualLink] = {}
    first_line: dict[PairingKey, int] = {}
    for line_no, record in iter_json_lines(path):
        try:
            link = InterlingualLink.model_validate(record)
        except ValidationError as error:
            field, message = validation_problem(error)
            raise InputError(path, message, line=line_no, field=field) from error
        key = (link.lang, link.item_id)
        if key in links:
            raise InputError(
                path, f"item {link.item_id!r} ({link.lang}) is linked twice; first on line {first_line[key]}",
                line=line_no, field="item_id",
            )
        links[key] = link
        first_line[key] = line_no
    return links


def find_pairing(set_file: str | Path) -> Path | None:
    """The interlingual.jsonl that belongs to a set file: beside it, or in the directory above it (where
    `generate` writes it: dataset/LANG/memorization.jsonl -> dataset/interlingual.jsonl); None when neither exists."""
    folder = Path(set_file).resolve().parent
    for candidate in (folder / INTERLINGUAL_FILE, folder.parent / INTERLINGUAL_FILE):
        if candidate.is_file():
            return candidate
    return None
