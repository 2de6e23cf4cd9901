"""The records of `crossknow pitfalls eval`: its config (config.yaml), one row per pair and model
(pairs.parquet) and its metrics (metrics.json)."""

from __future__ import annotations

from typing import Annotated, Literal

import pyarrow as pa
from pydantic import Field

from crossknow.data.schemas import Record
from crossknow.models.access import GENERATING, ModelsRole, RoleConfig, RoleKeys
from crossknow.pitfalls.simulate import SIMULATION_MAX_TOKENS, SIMULATION_TEMPERATURE
from crossknow.scoring.rules import Rule
from crossknow.store.config_keys import VOLATILE

Answering = Literal["loss", "generative"]
CELLS = ("right_wrong", "right_right", "wrong_right", "wrong_wrong")
"""The pair-level 2x2 cells, English first: right_wrong = right in English, wrong in the target language
(the cross-lingual weakness the paper looks for)."""


class PitfallsEvalConfig(RoleConfig):
    """Everything that decides an evaluation of models on bilingual pairs."""

    ROLES = (RoleKeys("models", own=("base_url", "api_key_env", "device", "dtype", "concurrency", "timeout_s",
                                     *GENERATING)),)

    pairs: str = Field(description="A released <Language>.json pair file, or a crossknow item file whose English "
                       "and target-language items share a pair_id.")
    models: ModelsRole = Field(description="Model spec to evaluate (repeat for several): default, "
                              "hf:PATH, gguf:FILE, llamacpp:FILE or openai:MODEL@URL (openai:MODEL: on --base-url).")
    answering: Answering = Field(default="loss", description="'loss': the option with the lowest loss through the "
                                 "engine (crossknow's addition); 'generative': the paper's zero-shot CoT templates "
                                 "with strict answer extraction.")
    limit: int | None = Field(default=None, ge=1, description="Evaluate the first N pairs of the file (unset: all).")
    k: int = Field(default=3, ge=1, description="The cap of pairs per original question whose violations are "
                   "reported (the paper's k).")
    rule: Rule = Field(default="lm-eval", description="Scoring rule of loss-based answering.")
    max_tokens: int = Field(default=SIMULATION_MAX_TOKENS, ge=1, description="Most tokens of one generative answer.")
    temperature: float = Field(default=SIMULATION_TEMPERATURE, ge=0, description="Temperature of generative "
                               "answering (the paper's 0.001).")
    max_attempts: int = Field(default=3, ge=1, description="Calls per question before its answer counts as invalid.")
    seed: int = Field(default=0, description="Base seed of generative answering.")
    batch_size: Annotated[int, VOLATILE] = Field(
        default=16, ge=1, description="Pairs per committed chunk (and per scorer batch); does "
        "not change the numbers."
    )
    cache: Annotated[str | None, VOLATILE] = Field(
        default=None, description="SQLite request cache (unset: the user's cache directory)."
    )
    prices: Annotated[str | None, VOLATILE] = Field(
        default=None, description="YAML/JSON file of model prices (USD per 1M tokens)."
    )


class PairRow(Record):
    """One pair answered by one model: a row of pairs.parquet."""

    pair_id: str = Field(description="The pair's id (Language:index for the release).")
    model: str = Field(description="The model spec that answered.")
    lang: str = Field(description="The target language's code.")
    source: str | None = Field(description="Source data set of the original question, when known.")
    category: str | None = Field(description="Subject domain of the pair, when known.")
    answer: int = Field(description="Index of the correct choice (the same on both sides).")
    en_choice: int | None = Field(description="The choice made in English; null when the answer is invalid.")
    target_choice: int | None = Field(description="The choice made in the target language; null when invalid.")
    en_correct: bool | None = Field(description="Whether the English answer is right; null when invalid.")
    target_correct: bool | None = Field(description="Whether the target-language answer is right; null when invalid.")
    cell: str | None = Field(description="The 2x2 cell (English, target): right_wrong, right_right, wrong_right or "
                             "wrong_wrong; null when either answer is invalid (the pair is then not scored).")
    en_error: str | None = Field(description="Why the English answer is invalid; null when valid.")
    target_error: str | None = Field(description="Why the target-language answer is invalid; null when valid.")
    en_raw: str | None = Field(description="The raw English output (generative answering); null for loss-based.")
    target_raw: str | None = Field(description="The raw target-language output (generative); null for loss-based.")


PAIRS_SCHEMA = pa.schema(
    [("pair_id", pa.string()), ("model", pa.string()), ("lang", pa.string()), ("source", pa.string()),
     ("category", pa.string()), ("answer", pa.int64()), ("en_choice", pa.int64()), ("target_choice", pa.int64()),
     ("en_correct", pa.bool_()), ("target_correct", pa.bool_()), ("cell", pa.string()), ("en_error", pa.string()),
     ("target_error", pa.string()), ("en_raw", pa.string()), ("target_raw", pa.string())]
)
"""pairs.parquet and the answers stage: one PairRow per (pair, model)."""


class ModelLanguageScores(Record):
    """One model on the pairs of one target language (the paper's Fig. 3 and 5, with the 2x2 counts)."""

    model: str = Field(description="The model spec.")
    lang: str = Field(description="The target language's code.")
    n_pairs: int = Field(description="Usable pairs answered.")
    n_scored: int = Field(description="Pairs with a valid answer on both sides: the accuracies' denominator.")
    n_invalid: int = Field(description="Pairs with an invalid answer on either side: reported, not scored.")
    english_accuracy: float | None = Field(description="Share right in English among the scored pairs.")
    target_accuracy: float | None = Field(description="Share right in the target language among the scored pairs.")
    drop: float | None = Field(description="english_accuracy - target_accuracy.")
    cells: dict[str, int] = Field(description="Scored pairs per 2x2 cell (see PairRow.cell).")


class CapViolations(Record):
    """The origins of one language with more than k pairs."""

    origins: int = Field(description="Original questions with more than k pairs.")
    pairs: int = Field(description="Pairs made from those questions.")
    max_pairs: int = Field(description="Most pairs made from one original question.")


class PitfallsEvalMetrics(Record):
    """metrics.json of a pitfalls evaluation."""

    scores: list[ModelLanguageScores] = Field(description="Per model and target language.")
    answering: str = Field(description="'loss' or 'generative'.")
    n_read: int = Field(description="Pairs read from the file.")
    n_usable: int = Field(description="Pairs without a flaw: the ones answered.")
    n_flawed: int = Field(description="Pairs with at least one flaw (invalid.jsonl): reported, never answered.")
    flaw_counts: dict[str, int] = Field(description="Pairs with each flaw (crossknow.data.pair_rules.FLAWS).")
    k: int = Field(description="The cap of pairs per original question.")
    cap_violations: dict[str, CapViolations] = Field(description="Per target language, the origins over the cap.")
    templates: dict[str, str] = Field(description="Generative answering: the template language used per language "
                                      "(by chat models; a base model answers crossknow's few-shot letter form).")
    prompt_formats: dict[str, str] = Field(
        default_factory=dict, description="How each model was asked, by spec: 'chat' (the paper's templates), "
        "'completion' (the few-shot letter form) or 'loss' (options scored); empty in runs of older versions.")
    pending: int = Field(description="(pair, model) answers left for a later run: a request failed in transport.")
    calls: int = Field(description="Model calls this invocation sent (cache hits excluded).")
    cached_calls: int = Field(description="Model calls this invocation answered from the request cache.")
    tokens: int = Field(description="Prompt and completion tokens this invocation sent.")
    cost_usd: float = Field(description="What this invocation's calls cost at the run's prices.")
    seconds: float = Field(description="Wall-clock seconds of this invocation, model loading included.")
    run_calls: int | None = Field(default=None, description="Model calls the whole run sent over all its invocations, "
                                  "each counted once (a call a killed invocation paid and a resumed one replayed "
                                  "from the cache counts once: the run's spend ledger, spend/); None where not "
                                  "recorded.")
    run_tokens: int | None = Field(default=None, description="Prompt and completion tokens of those calls.")
    run_cost_usd: float | None = Field(default=None, description="What those calls cost at the run's prices.")
