"""The settings and the input of `crossknow trace-sequences`: sequences to score at every checkpoint.

The input is the variants.jsonl of `crossknow perturb` (`SequenceVariant` lines) or any corpus JSONL, each
document read as an "original" variant of itself; a first line with a `method` field makes it a variants file.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Annotated

from pydantic import Field, model_validator

from crossknow.data.corpus import read_corpus
from crossknow.data.jsonl import iter_json_lines
from crossknow.data.sequence_variants import SequenceVariant, read_variants
from crossknow.dynamics.trace_config import CHECKPOINTS_HELP, PRUNE_HELP, check_prune
from crossknow.models.access import LOADING, ModelsRole, RoleConfig, RoleKeys
from crossknow.store.config_keys import VOLATILE


class SequenceLossConfig(RoleConfig):
    """Everything that decides a sequence-loss trace's numbers (config.yaml of a `trace-sequences` run)."""

    ROLES = (RoleKeys("checkpoints", own=("device", "dtype", *LOADING)),)

    checkpoints: ModelsRole = Field(
        description=CHECKPOINTS_HELP,
    )
    variants: str = Field(
        description="The sequences: variants.jsonl of `crossknow perturb`, or a corpus JSONL (id, lang, text) whose "
        "documents are scored as originals."
    )
    per_token: bool = Field(
        default=False,
        description="Also keep each token's loss, with its id, text and character span (token_loss.parquet; local "
        "models only).",
    )
    batch_size: Annotated[int, VOLATILE] = Field(
        default=8, ge=1, description="Sequences per forward pass; does not change the numbers."
    )
    prune: Annotated[bool, VOLATILE] = Field(default=False, description=PRUNE_HELP)

    @model_validator(mode="after")
    def _prune_has_hub_revisions(self) -> SequenceLossConfig:
        check_prune(self.prune, self.checkpoints.specs)
        return self


@dataclass(frozen=True)
class TracedSequence:
    """One sequence to score: a variant of a training sequence (or the original itself)."""

    variant_id: str
    source_id: str
    """The original training sequence's id (its own id for an original)."""
    lang: str
    method: str
    """'original' or the perturbation ('mask', 'reorder', 'partial', 'syntax', ...)."""
    x: int | None
    """Percent of tokens or sentences perturbed."""
    y: int | None
    """Window of a reorder."""
    a: int | None
    """Segment index of partial-a."""
    text: str
    """The sequence as text (decoded from `token_ids` for token-level variants)."""
    token_ids: tuple[int, ...] | None
    """The exact tokens of a token-level variant, scored as they are; None: `text` is tokenised."""
    line: int
    """1-based line of the input file."""


def _traced(variant: SequenceVariant, path: Path, line: int) -> TracedSequence:
    """A validated variant (its text and tokens checked non-empty by the record) as a sequence to score."""
    return TracedSequence(
        variant_id=variant.id, source_id=variant.source_id, lang=variant.lang, method=variant.method, x=variant.x,
        y=variant.y, a=variant.a, text=variant.text,
        token_ids=tuple(variant.token_ids) if variant.token_ids is not None else None, line=line,
    )


def read_sequences(path: str | Path) -> list[TracedSequence]:
    """Every sequence of a variants.jsonl or corpus JSONL file, in file order; InputError (file, line, field)
    for a malformed line or a repeated id."""
    path = Path(path)
    lines = iter_json_lines(path)
    first = next(lines)  # an empty file is an InputError
    if "method" not in first[1]:
        numbers = [line for line, _ in iter_json_lines(path)]
        return [TracedSequence(variant_id=doc.id, source_id=doc.id, lang=doc.lang, method="original", x=None,
                               y=None, a=None, text=doc.text, token_ids=None, line=line)
                for line, doc in zip(numbers, read_corpus(path), strict=True)]
    return [_traced(variant, path, line) for line, variant in read_variants(chain([first], lines), path)]
