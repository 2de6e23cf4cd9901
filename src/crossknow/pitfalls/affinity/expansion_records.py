"""The records of `crossknow pitfalls expand`: its config (config.yaml), one row per (seed pair, language)
(the `expanded` stage) and its metrics (metrics.json)."""

from __future__ import annotations

from typing import Annotated, Literal

import pyarrow as pa
from pydantic import Field

from crossknow.data.schemas import Record
from crossknow.models.access import GENERATING, ModelRole, RoleConfig, RoleKeys
from crossknow.store.config_keys import VOLATILE

ExpandFrom = Literal["seed", "english"]


class ExpandConfig(RoleConfig):
    """Everything that decides an expansion of seed pairs into other languages."""

    ROLES = (RoleKeys("proxy", own=("base_url", "api_key_env", "device", "dtype", "concurrency", "timeout_s",
                                    *GENERATING)),)

    seeds: list[str] = Field(min_length=2, description="Seed pair files, one per seed language: the release's "
                             "<Language>.json (repeat the option for each; at least two languages).")
    proxy: ModelRole = Field(description="Model spec of the translator: default, hf:PATH, gguf:FILE, llamacpp:FILE or "
                       "openai:MODEL[@URL] (without @URL: --base-url).")
    per_seed: int = Field(default=100, ge=1, description="Seed pairs sampled per seed language (the paper's 100); "
                          "all usable pairs when the file has fewer.")
    sample_seed: int = Field(default=0, description="Seed of the sampling of seed pairs.")
    expand_from: ExpandFrom = Field(default="seed", description="'seed': translate the seed language's side "
                                    "(transori, transpre, transsuf, transchoices; the paper's section 3.3); "
                                    "'english': translate the English side (oriquestion, prequestion, sufquestion, "
                                    "choices; crossknow's option, no pivot through the seed language).")
    max_tokens: int = Field(default=1024, ge=1, description="Most tokens of one translation (the paper's 1,024).")
    max_attempts: int = Field(default=3, ge=1, description="Calls per translation before it is dropped.")
    batch_size: Annotated[int, VOLATILE] = Field(
        default=16, ge=1, description="Seed pairs per committed chunk; does not change results."
    )
    cache: Annotated[str | None, VOLATILE] = Field(
        default=None, description="SQLite request cache (unset: the user's cache directory)."
    )
    prices: Annotated[str | None, VOLATILE] = Field(
        default=None, description="YAML/JSON file of model prices (USD per 1M tokens)."
    )


class ExpandedRow(Record):
    """One seed pair in one language: a row of the `expanded` stage."""

    pair_id: str = Field(description="Id of the expanded pair: '<seed pair id>><language code>'.")
    seed_id: str = Field(description="Id of the seed pair ('<Language>:<index in the release file>').")
    seed_lang: str = Field(description="Language code of the seed pair's target side (the paper's y).")
    lang: str = Field(description="Language code of this expansion (the paper's x); equal to seed_lang for the "
                      "seed pair itself, which is kept untranslated.")
    question: str | None = Field(description="The question in `lang`: the translated original part with the "
                                 "translated inserted text before and after it; null when dropped.")
    choices: list[str] | None = Field(description="The translated choices, in order; null when dropped.")
    answer: int = Field(description="Index of the correct choice (the seed pair's).")
    error: str | None = Field(description="Why the expansion was dropped (a flaw code of "
                              "crossknow.data.pair_rules.FLAWS or 'invalid output', then the detail); null when made.")


EXPANDED_SCHEMA = pa.schema(
    [("pair_id", pa.string()), ("seed_id", pa.string()), ("seed_lang", pa.string()), ("lang", pa.string()),
     ("question", pa.string()), ("choices", pa.list_(pa.string())), ("answer", pa.int64()), ("error", pa.string())]
)
"""The `expanded` stage: one ExpandedRow per (seed pair, language)."""


class ExpandMetrics(Record):
    """metrics.json of an expansion."""

    languages: list[str] = Field(description="The languages, in seed-file order (each is seed and target).")
    seeds_read: dict[str, int] = Field(description="Pairs read per seed language.")
    seeds_flawed: dict[str, int] = Field(description="Pairs per seed language with a flaw (invalid.jsonl), never "
                                         "sampled.")
    seeds_sampled: dict[str, int] = Field(description="Seed pairs sampled per seed language.")
    made: dict[str, int] = Field(description="Expanded pairs made per language (seed pairs included).")
    dropped: dict[str, int] = Field(description="Translations dropped after retries, by reason code.")
    pending: int = Field(description="(seed pair, language) translations left for a later run: a request failed "
                         "in transport.")
    calls: int = Field(description="Model calls this invocation sent (cache hits excluded).")
    cached_calls: int = Field(description="Model calls this invocation answered from the request cache.")
    tokens: int = Field(description="Prompt and completion tokens this invocation sent.")
    cost_usd: float = Field(description="What this invocation's calls cost at the run's prices.")
    seconds: float = Field(description="Wall-clock seconds of this invocation, model loading included.")
