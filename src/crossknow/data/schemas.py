"""The records crossknow reads and writes. Every model forbids unknown fields."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

BLANK = "[BLANK]"
"""The marker that stands for the answer in a cloze prompt."""

ItemKind = Literal["cloze", "question"]

LANGUAGE_TAG = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8}){0,3}$")
"""A short BCP 47 language tag: 'en', 'ja', 'zh-Hant', 'pt-BR' (a primary subtag and at most three more)."""

MAX_ID_CHARS = 256
"""Longest item id accepted."""
MAX_TEXT_CHARS = 100_000
"""Longest prompt, question or answer accepted (far above any benchmark's; a guard against a corrupt file)."""
MAX_OPTIONS = 26
"""Most options an item may have."""
MAX_OPTION_CHARS = 10_000
"""Longest option accepted."""


def language_tag(value: str) -> str:
    """`value` when it is a language tag (LANGUAGE_TAG); ValueError saying so otherwise."""
    if not LANGUAGE_TAG.match(value):
        raise ValueError(f"{_shown(value)} is not a language tag (like 'en', 'ja' or 'zh-Hant')")
    return value


def check_choices(choices: Sequence[str], answer: int | None, noun: str) -> None:
    """The one rule for the options of a multiple-choice question: none empty, no two the same, and the answer
    (when given) an index among them; ValueError naming the first problem (`noun`: 'option' or 'choice')."""
    if answer is not None and answer >= len(choices):
        raise ValueError(f"answer index {answer} is out of range for {len(choices)} {noun}s")
    for index, choice in enumerate(choices):
        if not choice.strip():
            raise ValueError(f"{noun} {index} is empty ({choice!r})")
        if choice in choices[:index]:
            raise ValueError(f"{noun} {index} ({_shown(choice)}) repeats {noun} {choices.index(choice)}")


def _shown(value: str) -> str:
    return repr(value) if len(value) <= 40 else repr(value[:40]) + f"... ({len(value)} characters)"


LanguageTag = Annotated[str, AfterValidator(language_tag)]
"""A language code, validated as a short BCP 47 tag."""
ItemId = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]
"""An item or pair id: non-empty, at most MAX_ID_CHARS characters."""


class Record(BaseModel):
    """Base of every saved record: unknown fields are an error, values are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class MCItem(Record):
    """A multiple-choice item, scored by the loss of each option."""

    id: ItemId = Field(description="Identifier, unique within the set the item was read from.")
    lang: LanguageTag = Field(description="Language of the prompt and options (ISO 639-1, e.g. 'en', 'ja').")
    kind: ItemKind = Field(description="'cloze' (prompt holds exactly one [BLANK]) or 'question'.")
    prompt: str = Field(
        min_length=1, max_length=MAX_TEXT_CHARS, description="The cloze sentence with [BLANK], or the question."
    )
    options: list[Annotated[str, Field(max_length=MAX_OPTION_CHARS)]] = Field(
        min_length=2, max_length=MAX_OPTIONS, description="The candidate answers, in presentation order."
    )
    answer: int = Field(ge=0, strict=True, description="Index of the correct option in `options` (an integer: "
                        "\"1\", 1.0 and true are refused, not read as 1).")
    source_lang: LanguageTag | None = Field(
        default=None, description="Language the item's knowledge was taken from, when known."
    )
    pair_id: ItemId | None = Field(
        default=None, description="Shared by translations of one item (links e.g. an English and a Japanese item)."
    )
    metadata: dict[str, Any] = Field(default_factory=dict, description="Source-specific fields, kept unchanged.")

    @model_validator(mode="after")
    def _check(self) -> MCItem:
        check_choices(self.options, self.answer, "option")
        if self.kind == "cloze" and self.prompt.count(BLANK) != 1:
            raise ValueError(f"a cloze prompt must hold exactly one {BLANK}, found {self.prompt.count(BLANK)}")
        return self


class QAItem(Record):
    """A closed-book question with a reference answer (ECLEKTIC), judged rather than scored by loss."""

    id: ItemId = Field(description="Identifier, unique within the set: question id and language.")
    lang: LanguageTag = Field(description="Language of this question and answer.")
    question: str = Field(min_length=1, max_length=MAX_TEXT_CHARS, description="The question, in `lang`.")
    answer: str = Field(min_length=1, max_length=MAX_TEXT_CHARS, description="The reference answer, in `lang`.")
    context: str | None = Field(default=None, description="The source passage the question was written from.")
    source_lang: LanguageTag | None = Field(default=None, description="Language whose Wikipedia the fact lives in.")
    pair_id: ItemId | None = Field(default=None, description="Shared by the translations of one question.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Source-specific fields, kept unchanged.")


class BilingualPair(Record):
    """One document (or sentence) told in two or more languages."""

    id: str = Field(min_length=1, description="Identifier of the pair.")
    texts: dict[str, str] = Field(description="Text per language code; at least two languages.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Title, keywords and other fields.")

    @model_validator(mode="after")
    def _check(self) -> BilingualPair:
        if len(self.texts) < 2:
            raise ValueError("a bilingual pair needs texts in at least two languages")
        return self


class InvalidRecord(Record):
    """An input record that was read but cannot be scored, with the reason; reported, never dropped silently."""

    path: str = Field(description="The file the record came from.")
    line: int | None = Field(description="1-based line (JSONL) or 1-based position in a JSON list.")
    field: str | None = Field(description="The field at fault, when one is.")
    reason: str = Field(description="Why the record cannot be scored.")
    item_id: str | None = Field(
        default=None, description="The item's id, for an item that was read but could not be scored by the model."
    )


class ItemSet(BaseModel):
    """Items read from one file, with the records that could not be used."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Name of the set (usually the file's stem).")
    format: str = Field(description="The reader that produced it (adaxeval, pitfalls, eclektic, jsonl).")
    items: list[MCItem | QAItem] = Field(description="The usable items, in file order.")
    invalid: list[InvalidRecord] = Field(default_factory=list, description="Records reported as unusable.")
