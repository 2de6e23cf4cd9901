"""The records of `crossknow perturb`: its config, one failed perturbation, and one row of the summary table.

A perturbation that cannot be made (a sequence too short for the edit distance, too few synonyms or sentences, an
invalid rewrite) is a `PerturbationFailure` in failures.jsonl, counted in the summary and never emitted at a
smaller distance; variants.jsonl holds `crossknow.data.sequence_variants.SequenceVariant` lines.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from crossknow.data.schemas import LanguageTag, Record
from crossknow.data.sequence_variants import PARTIAL_SEGMENTS, REWRITE_METHODS, Method
from crossknow.models.access import GENERATING, ModelRole, RoleConfig, RoleKeys
from crossknow.store.config_keys import VOLATILE

SYNONYM_METHODS: tuple[str, ...] = ("monosyn", "mltsyn")
"""Token-level perturbations that need a synonym dictionary."""
DEFAULT_METHODS: tuple[str, ...] = ("mask", "random", "delete", "reorder", "partial")
"""What `crossknow perturb` makes unless told: every method that needs neither a dictionary nor a generator."""


class PerturbationFailure(Record):
    """A perturbation that could not be made for one sequence (failures.jsonl): reported, counted, not emitted."""

    source_id: str = Field(description="The original training sequence's id.")
    method: Method = Field(description="The perturbation.")
    x: int | None = Field(description="Percent asked (tokens or sentences); null for partial.")
    y: int | None = Field(description="reorder's window; else null.")
    a: int | None = Field(description="partial's segment; else null.")
    reason: str = Field(description="Why it could not be made, naming the value at fault.")
    raw_output: str | None = Field(
        default=None, description="For an invalid rewrite: the generator's last raw output; else null."
    )


class SummaryRow(Record):
    """One row of summary.json: a setting's counts and mean edit distance."""

    method: str = Field(description="'original' or the perturbation.")
    label: str = Field(description="The setting's name: mask-8, reorder-4@2, partial-3, syntax-40, original.")
    x: int | None = Field(description="Percent perturbed, as in SequenceVariant.x.")
    y: int | None = Field(description="reorder's window.")
    a: int | None = Field(description="partial's segment.")
    variants: int = Field(ge=0, description="Variants written to variants.jsonl.")
    failed: int = Field(ge=0, description="Sequences for which this perturbation could not be made (failures.jsonl).")
    mean_edit_distance: float | None = Field(description="Mean token edit distance of the variants; null when none.")
    mean_edit_fraction: float | None = Field(
        description="Mean of edit_distance / the original's token count; null when no variant."
    )


def _percent(values: list[int], what: str) -> list[int]:
    for value in values:
        if not 1 <= value <= 100:
            raise ValueError(f"{what} {value} is outside 1-100 (a percent)")
    return sorted(set(values))


class PerturbConfig(RoleConfig):
    """Everything that decides the variants of `crossknow perturb` (config.yaml of its run directory)."""

    ROLES = (RoleKeys("generator", own=("base_url", "api_key_env", "concurrency", "timeout_s", *GENERATING)),)

    corpus: str = Field(description="Corpus JSONL (id, lang, text): each document of --lang is a training sequence.")
    lang: LanguageTag = Field(default="ja", description="Language of the sequences to sample.")
    n: int = Field(
        default=2000, ge=1, description="Sequences to sample (all when the corpus has fewer; the paper: 2000)."
    )
    methods: list[Method] = Field(
        default_factory=lambda: list(DEFAULT_METHODS), min_length=1,
        description="Perturbations: mask, random, delete, reorder, monosyn, mltsyn (need --synonyms), partial, syntax, "
        "lexicon, semantic, translation (need --generator).",
    )
    x: list[int] = Field(
        default_factory=lambda: [2, 4, 8, 16, 32], min_length=1,
        description="Token-level X: percent of the original's tokens to edit (the target token edit distance).",
    )
    y: list[int] = Field(
        default_factory=lambda: [1, 2, 3, 4, 8, 16], min_length=1,
        description="reorder windows Y (the paper's 2^0..2^4, and 3: the window of the authors' reorder-X@3, which "
        "Fig. 6 shows).",
    )
    sentence_x: list[int] = Field(
        default_factory=lambda: [40], min_length=1,
        description="Rewrite X: percent of a sequence's sentences rewritten (the paper's Fig. 9: 40).",
    )
    partial_unit: Literal["sentences", "tokens"] = Field(
        default="sentences",
        description="partial-a's four segments: contiguous groups of whole sentences (only documents of 4 or more "
        "sentences are then sampled) or four equal runs of tokens.",
    )
    model: str = Field(
        default="default",
        description="The model whose tokenizer makes and measures the variants: default, hf:PATH_OR_ID[@REV] or "
        "gguf:FILE.",
    )
    random_tokenizer: str | None = Field(
        default=None,
        description="random-X draws from this tokenizer's vocabulary (default, hf:PATH_OR_ID, gguf:FILE; unset: the "
        "model's own; the paper: llm-jp's).",
    )
    mask_token: str | None = Field(
        default=None, description="mask-X's token (unset: the tokenizer's unknown token, else its mask or pad token)."
    )
    synonyms: str | None = Field(
        default=None, description="Synonym dictionary: a TSV (lemma_lang, lemma, synonym_lang, synonym) or a Japanese "
        "WordNet SQLite file (wnjpn.db)."
    )
    stop_words: str | None = Field(
        default=None,
        description="Stop words kept from synonym replacement, one a line (unset: crossknow's short list).",
    )
    cross_lang: LanguageTag = Field(
        default="en", description="The other language: mltsyn's synonyms and translation's target."
    )
    generator: ModelRole | None = Field(
        default=None,
        description="Generator spec that rewrites sentences (default, hf:..., gguf:..., openai:MODEL[@URL]).",
    )
    max_tokens: int = Field(default=512, ge=16, description="Most tokens of one rewrite.")
    max_attempts: int = Field(default=3, ge=1, description="Generator calls per sentence before it counts as invalid.")
    temperature: float = Field(default=0.0, ge=0, description="Sampling temperature of the rewrites.")
    cache: Annotated[str | None, VOLATILE] = Field(
        default=None, description="SQLite request cache (unset: the user's cache directory)."
    )
    seed: int = Field(default=0, description="Seed of the sample and of every perturbation.")
    batch_size: Annotated[int, VOLATILE] = Field(
        default=32, ge=1, description="Rewrite requests per committed shard; changes no output."
    )

    @field_validator("methods")
    @classmethod
    def _distinct_methods(cls, methods: list[str]) -> list[str]:
        return list(dict.fromkeys(methods))

    @field_validator("x")
    @classmethod
    def _token_percent(cls, values: list[int]) -> list[int]:
        return _percent(values, "X")

    @field_validator("sentence_x")
    @classmethod
    def _sentence_percent(cls, values: list[int]) -> list[int]:
        return _percent(values, "sentence X")

    @field_validator("y")
    @classmethod
    def _windows(cls, values: list[int]) -> list[int]:
        for value in values:
            if value < 1:
                raise ValueError(f"window Y {value} is below 1 (a swap moves a token at least one position)")
        return sorted(set(values))

    @property
    def min_sentences(self) -> int:
        """Fewest sentences a sampled document must have: 4 when partial-a cuts sentences (the authors' code asserts
        4 for every sequence of its sample; the paper is silent), else 0 (any document)."""
        return PARTIAL_SEGMENTS if "partial" in self.methods and self.partial_unit == "sentences" else 0

    @model_validator(mode="after")
    def _needs(self) -> PerturbConfig:
        synonym = [m for m in self.methods if m in SYNONYM_METHODS]
        rewrite = [m for m in self.methods if m in REWRITE_METHODS]
        if synonym and self.synonyms is None:
            raise ValueError(f"{', '.join(synonym)} need a synonym dictionary (--synonyms FILE)")
        if synonym and self.lang != "ja":
            raise ValueError(f"{', '.join(synonym)} take Japanese sequences only (--lang ja): candidates are Sudachi "
                             f"morphemes filtered as the paper's Appendix A.3.1; got --lang {self.lang}")
        if rewrite and self.generator is None:
            raise ValueError(f"{', '.join(rewrite)} need a generator (--generator SPEC)")
        if self.cross_lang == self.lang and {"mltsyn", "translation"} & set(self.methods):
            raise ValueError(f"--cross-lang {self.cross_lang} is the sequences' own language")
        return self


class PerturbSummary(Record):
    """summary.json of a `crossknow perturb` run."""

    sequences_asked: int = Field(description="--n: sequences asked for.")
    sequences: int = Field(
        description="Sequences sampled (fewer than asked when the corpus has fewer of --lang with min_sentences)."
    )
    min_sentences: int = Field(
        default=0, description="Fewest sentences a sampled document has: 4 with partial-a by sentences, else 0."
    )
    tokenizer: str = Field(description="The model tokenizer that made and measured the variants.")
    mask_token: str | None = Field(description="mask-X's token as text; null when mask was not asked for.")
    random_vocabulary: str | None = Field(description="random-X's vocabulary; null when random was not asked for.")
    synonyms: str | None = Field(description="The synonym dictionary file; null when none was used.")
    variants: int = Field(description="Lines of variants.jsonl, originals included.")
    failures: int = Field(description="Lines of failures.jsonl: perturbations that could not be made.")
    rewrite_calls: int = Field(description="Generator calls this invocation sent (cache hits not included).")
    rewrite_cached_calls: int = Field(description="Generator calls this invocation answered from the request cache.")
    rewrite_cost_usd: float = Field(description="Cost of the calls this invocation sent, at the run's prices.")
    rewrite_model: str | None = Field(
        default=None, description="The rewrite generator as 'backend:model id'; null when no rewrite was asked for."
    )
    rewrite_prompt_format: Literal["chat", "completion"] | None = Field(
        default=None,
        description="How the rewrites were asked: 'chat' (crossknow's chat prompts, JSON answers) or 'completion' "
        "(crossknow's few-shot prompts for base models, one line a call); null when no rewrite was asked for.",
    )
    seconds: float = Field(description="Wall-clock time of this invocation.")
    rows: list[SummaryRow] = Field(description="Counts and mean edit distance per setting (method, x, y, a).")
