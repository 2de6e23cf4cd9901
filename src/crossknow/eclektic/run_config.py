"""The config of an ECLEKTIC run (`crossknow eclektic run|answer|judge`), saved as the run's config.yaml.

One config covers the three stages, so that `answer`, `judge` and `run` on one run directory are the same
run taken to different ends. The scoring fields and the list of judges may change between invocations
(typed VOLATILE): scores are recomputed from the judgements every time, metrics.json records how, and judgements
are kept per judge, so a judge added later only judges what it has not.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator, model_validator

from crossknow.data.schemas import Record
from crossknow.eclektic.answer import ANSWER_MAX_TOKENS
from crossknow.eclektic.examples import Variant
from crossknow.eclektic.judge import JUDGE_MAX_TOKENS
from crossknow.eclektic.judge_free import GOLD_LOSS_JUDGE, RECALL_JUDGE, RECALL_THRESHOLD
from crossknow.eclektic.metrics import Interval, SourceRows
from crossknow.eclektic.prompts import Setting
from crossknow.models.access import GENERATING, ModelRole, ModelsRole, RoleConfig, RoleKeys
from crossknow.store.config_keys import VOLATILE

JUDGE_FREE = (RECALL_JUDGE, GOLD_LOSS_JUDGE)
"""The judge-free judges (crossknow's own, `crossknow.eclektic.judge_free`)."""


class ScoreConfig(Record):
    """How verdicts become scores (`crossknow eclektic score`; part of every run's config)."""

    source_rows: Annotated[SourceRows, VOLATILE] = Field(
        default="exclude", description="Which rows are examples: 'exclude' (translated "
        "rows only; reproduces Table 2 from Figure 5's cells), 'include' or 'helm' "
        "(crossknow.eclektic.metrics)."
    )
    ci: Annotated[Interval, VOLATILE] = Field(
        default="normal", description="Interval method: 'normal' approximation or 'bootstrap' "
        "over questions."
    )
    confidence: Annotated[float, VOLATILE] = Field(
        default=0.95, gt=0, lt=1, description="Confidence level of the intervals."
    )
    n_boot: Annotated[int, VOLATILE] = Field(
        default=2000, ge=1, description="Bootstrap resamples (with --ci bootstrap)."
    )
    boot_seed: Annotated[int, VOLATILE] = Field(default=0, description="Seed of the bootstrap (with --ci bootstrap).")


class EclekticConfig(ScoreConfig, RoleConfig):
    """Everything that decides an ECLEKTIC run (the scoring fields first)."""

    ROLES = (RoleKeys("model", own=("base_url", "api_key_env")),
             RoleKeys("judges", own=("base_url", "api_key_env"), prefix="judge_"))
    SHARED = ("concurrency", "timeout_s", "device", "dtype", *GENERATING)

    data: str = Field(description="The set: ECLEKTIC's released JSON lines, or crossknow's QA/MC item file with "
                      "pair_id and source_lang (see crossknow.eclektic.examples).")
    model: ModelRole = Field(description="Generator spec of the model under test: default, hf:PATH, gguf:FILE, "
                             "llamacpp:FILE or openai:MODEL@URL (openai:MODEL: on --base-url).")
    variant: Variant = Field(default="main", description="'main': every question in every language of the set; "
                             "'popular': each question only in the languages it has (section 5).")
    limit: int | None = Field(default=None, ge=1, description="Keep the first N questions (unset: all).")
    setting: Setting = Field(default="closed-book", description="The prompt setting (Appendix A.3; Table 3).")
    samples: int = Field(default=1, ge=1, description="Answers sampled per question row (above 1 needs "
                         "--temperature above 0).")
    temperature: float = Field(default=0.0, ge=0, description="Sampling temperature of the model under test.")
    seed: int = Field(default=0, description="Base seed of the answers' sampling.")
    max_tokens: int = Field(default=ANSWER_MAX_TOKENS, ge=1, description="Most tokens of one answer.")
    judges: Annotated[ModelsRole | None, VOLATILE] = Field(
        default=None, description="Generator spec of an LLM judge (the paper's "
        "prompt, Appendix A.2), e.g. openai:gpt-4o@https://api.openai.com/v1, or "
        "openai:gpt-4o with --judge-base-url."
    )
    judge_free: Annotated[list[str], VOLATILE] = Field(
        default_factory=list, description="A judge-free judge, crossknow's own: 'recall' "
        "(gold-answer word recall) or 'gold-loss' (greedy check of the gold answer's "
        "tokens through the engine; a model that can score)."
    )
    recall_threshold: float = Field(default=RECALL_THRESHOLD, gt=0, le=1,
                                    description="Recall at or above which the 'recall' judge says correct.")
    judge_max_tokens: int = Field(default=JUDGE_MAX_TOKENS, ge=1, description="Most tokens of one LLM verdict.")
    max_attempts: int = Field(default=3, ge=1, description="Calls per prompt before its output counts as invalid.")
    params: Annotated[float | None, VOLATILE] = Field(
        default=None, gt=0, description="Parameter count of the model under test, for "
        "the leaderboard's size plot (e.g. 7.6e9)."
    )
    cache: Annotated[str | None, VOLATILE] = Field(
        default=None, description="SQLite request cache (unset: the user's cache directory)."
    )
    prices: Annotated[str | None, VOLATILE] = Field(
        default=None, description="YAML/JSON file of model prices (USD per 1M tokens)."
    )
    batch_size: Annotated[int, VOLATILE] = Field(
        default=16, ge=1, description="Questions per committed shard; does not change the "
        "output."
    )

    @field_validator("judge_free")
    @classmethod
    def _known_judge_free(cls, names: list[str]) -> list[str]:
        unknown = [name for name in names if name not in JUDGE_FREE]
        if unknown:
            raise ValueError(f"unknown judge-free judge {unknown[0]!r}; choose from {', '.join(JUDGE_FREE)}")
        return list(dict.fromkeys(names))

    @field_validator("judges")
    @classmethod
    def _distinct_judges(cls, judges: ModelsRole | None) -> ModelsRole | None:
        if judges is None:
            return None
        clash = [spec for spec in judges.specs if spec in JUDGE_FREE]
        if clash:
            raise ValueError(f"{clash[0]!r} is a judge-free judge: pass it with --judge-free")
        return judges.model_copy(update={"specs": list(dict.fromkeys(judges.specs))})

    def judge_specs(self) -> list[str]:
        """The LLM judges' specs (none without --judge)."""
        return self.judges.specs if self.judges is not None else []

    @model_validator(mode="after")
    def _samples_need_temperature(self) -> EclekticConfig:
        if self.samples > 1 and self.temperature <= 0:
            raise ValueError(f"{self.samples} samples at temperature 0 would be copies of one greedy answer: set "
                             "--temperature above 0")
        return self

    def all_judges(self) -> list[str]:
        """Every judge of the run, LLM judges first, in the order given."""
        return [*self.judge_specs(), *self.judge_free]
