"""variants.jsonl: training sequences and their perturbations (full paper, section 5.1).

`crossknow perturb` writes one `SequenceVariant` a line: every sampled training sequence as itself (method
"original") and each of its perturbations; `crossknow trace-sequences` reads the file back through
`read_variants`. The record, the perturbation names and the setting label live here, below both commands,
so that the writer and the reader share one contract (DESIGN.md, layers).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator

from crossknow.data.jsonl import validation_problem
from crossknow.data.schemas import LanguageTag, Record
from crossknow.errors import InputError

Method = Literal[
    "mask", "random", "delete", "reorder", "monosyn", "mltsyn", "partial", "syntax", "lexicon", "semantic",
    "translation",
]
"""The perturbations of section 5.1, in the paper's order."""
TOKEN_METHODS: tuple[str, ...] = ("mask", "random", "delete", "reorder", "monosyn", "mltsyn")
"""Token-level perturbations (section 5.1.1), made on the model's token ids."""
REWRITE_METHODS: tuple[str, ...] = ("syntax", "lexicon", "semantic", "translation")
"""Sentence rewrites by a generator (section 5.1.2)."""
METHOD_ORDER: tuple[str, ...] = ("original", *TOKEN_METHODS, "partial", *REWRITE_METHODS)
"""'original' and the perturbations in the paper's order (section 5.1), as tables and figures list them."""
LEVELS: dict[str, str] = {"original": "none", **{method: "token" for method in TOKEN_METHODS}}
"""The level of each method that is not a sentence-level one."""
PARTIAL_SEGMENTS = 4
"""partial-a splits a sequence into this many segments (section 5.1.2)."""


def variant_label(method: str, x: int | None = None, y: int | None = None, a: int | None = None) -> str:
    """A setting's name as the paper writes it: original, mask-8, reorder-4@2, partial-3, syntax-40."""
    label = method
    if a is not None:
        label += f"-{a}"
    if x is not None:
        label += f"-{x}"
    if y is not None:
        label += f"@{y}"
    return label


class SequenceVariant(Record):
    """One line of variants.jsonl: a sampled training sequence or one perturbation of it."""

    id: str = Field(min_length=1, description="Unique id: '{source_id}:{label}', e.g. 'd17:mask-8', 'd17:original'.")
    source_id: str = Field(min_length=1, description="The id of the original training sequence (a corpus document).")
    lang: LanguageTag = Field(description="Language of the original sequence.")
    method: Literal["original", Method] = Field(
        description="'original' or the perturbation: mask, random, delete, reorder, monosyn, mltsyn (token level), "
        "partial, syntax, lexicon, semantic, translation (sentence level)."
    )
    level: Literal["token", "sentence", "none"] = Field(
        description="'token' (made on token ids, section 5.1.1), 'sentence' (section 5.1.2) or 'none' (the original)."
    )
    x: int | None = Field(
        ge=1, le=100,
        description="Percent perturbed: of the original's tokens (token level: the target token edit distance) or of "
        "its sentences (rewrites); null for original and partial.",
    )
    y: int | None = Field(ge=1, description="reorder's window: no token moves farther than y positions; else null.")
    a: int | None = Field(ge=1, le=PARTIAL_SEGMENTS, description="partial's segment, 1 to 4 (1-based); else null.")
    text: str = Field(description="The variant as text; for token-level variants, token_ids decoded (special tokens "
                      "kept, so a mask shows as '<unk>').")
    token_ids: list[Annotated[int, Field(ge=0)]] | None = Field(
        description="The exact token ids of a token-level variant (or of a token-unit partial segment), without BOS, "
        "to be scored as they are; null where the text is to be tokenised."
    )
    tokenizer: str = Field(description="The tokenizer that token_ids belong to and edit_distance was counted in.")
    edit_distance: int = Field(
        ge=0,
        description="Levenshtein distance between the original's token ids and the variant's (token_ids, else the "
        "text's tokens after BOS), each insertion, deletion and substitution of one token counting 1.",
    )
    seed: int = Field(description="The run's seed; the variant's random draws are seeded by (seed, source_id, label).")

    @model_validator(mode="after")
    def _consistent(self) -> SequenceVariant:
        """The settings that `method` takes, and nothing empty to score."""
        level = LEVELS.get(self.method, "sentence")
        if self.level != level:
            raise ValueError(f"level {self.level!r} does not fit method {self.method!r}, which is {level!r}")
        for name, allowed in (("x", self.method not in ("original", "partial")), ("y", self.method == "reorder"),
                              ("a", self.method == "partial")):
            if getattr(self, name) is not None and not allowed:
                raise ValueError(f"method {self.method!r} takes no {name} (found {getattr(self, name)})")
        if not self.text.strip():
            raise ValueError("the text is empty")
        if self.token_ids == []:
            raise ValueError("token_ids: an empty token sequence")
        return self


def variant_of_line(record: dict[str, Any], path: str | Path, line: int) -> SequenceVariant:
    """One variants.jsonl line validated as a SequenceVariant (strictly: "8" is no integer); InputError naming
    the file, the line and the field otherwise."""
    try:
        return SequenceVariant.model_validate(record, strict=True)
    except ValidationError as error:
        field, message = validation_problem(error)
        raise InputError(path, f"{message} (as a sequence variant)", line=line, field=field) from error


def read_variants(
    lines: Iterator[tuple[int, dict[str, Any]]], path: str | Path
) -> Iterator[tuple[int, SequenceVariant]]:
    """(line, variant) for each of `lines` (`iter_json_lines` of variants.jsonl at `path`), in file order;
    InputError (file, line, field) for a malformed line or an id seen before."""
    seen: dict[str, int] = {}
    for line, record in lines:
        variant = variant_of_line(record, path, line)
        if variant.id in seen:
            raise InputError(path, f"duplicate variant id {variant.id!r}, first used on line {seen[variant.id]}",
                             line=line, field="id")
        seen[variant.id] = line
        yield line, variant
