"""The records of `crossknow eclektic build` (`crossknow.eclektic.build`): its config, a line of
questions.jsonl (one BuiltQuestion) and build.json (BuildSummary). The review sheet
(`crossknow.eclektic.review_sheet`) reads BuiltQuestion too."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from crossknow.data.eclektic import LANGUAGES
from crossknow.eclektic.build_documents import FilterCounts, Selection
from crossknow.eclektic.build_pivot import PivotCheck, Texts
from crossknow.models.access import GENERATING, ModelRole, RoleConfig, RoleKeys
from crossknow.store.config_keys import VOLATILE


class BuildConfig(RoleConfig):
    """What `crossknow eclektic build` is asked to do; the paper's values are the defaults."""

    ROLES = (RoleKeys("model", own=("base_url", "api_key_env", "concurrency", "timeout_s", *GENERATING)),)

    model: ModelRole = Field(description="Generator spec that writes, translates and back-translates (the paper: "
                             "Gemini), e.g. openai:gpt-4o@https://api.openai.com/v1.")
    documents: str = Field(description="The collection: JSON lines of id, lang, title, text, url (optional) and "
                                       "other_langs (see crossknow.eclektic.build_documents).")
    languages: list[str] = Field(default=list(LANGUAGES), description="The languages of the set (ECLEKTIC's 12 "
                                 "by default).")
    selection: Selection = Field(default="single_language", description="Which articles: 'single_language' (the "
                                 "main set: in exactly one language of the set, section 3.1) or 'popular' (popular "
                                 "pages: the most viewed articles lacking an equivalent in at least one language of "
                                 "the set, section 5; needs `views` in the collection).")
    per_language: int | None = Field(default=None, ge=1, description="Articles taken per language (unset: the "
                                     "paper's, 100 for the main set and 200 for popular pages).")
    min_views: int = Field(default=100, ge=0, description="The main set's views filter: fewer views drop an article "
                           "that carries `views` (the paper: at least 100 during 2023).")
    min_chars: int = Field(default=200, ge=0, description="Shortest article text kept, in characters (the paper: "
                                                          "200).")
    n_sentences: int = Field(default=10, ge=1, description="Sentences of the article given as context (the paper: "
                                                           "the first 10).")
    seed: int = Field(default=0, description="Seed of the per-language sample and of the first model call.")
    pivot_threshold: float = Field(default=0.45, ge=0.0, le=1.0, description="A back-translated field with a chrF "
                                   "below this flags its row for review (crossknow's choice: unrelated questions "
                                   "score about 0.1-0.35, faithful paraphrases about 0.6-0.7).")
    max_attempts: int = Field(default=3, ge=1, description="Model calls per output before it is recorded invalid "
                              "(each with the next seed: at temperature 0 a deterministic server answers the same).")
    max_tokens: int = Field(default=1024, ge=1, description="Most tokens per output (room for a 10-sentence context).")
    temperature: float = Field(default=0.0, ge=0.0, description="Sampling temperature of every call (0 = greedy).")
    batch_size: Annotated[int, VOLATILE] = Field(
        default=64, ge=1, description="Prompts per client call; progress is reported after each."
    )

    @field_validator("languages")
    @classmethod
    def _known_languages(cls, languages: list[str]) -> list[str]:
        unknown = [lang for lang in languages if lang not in LANGUAGES]
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: the released format has columns for {', '.join(LANGUAGES)} only")
        if len(set(languages)) != len(languages) or len(languages) < 2:
            raise ValueError("give at least two languages, each once")
        return languages

    @model_validator(mode="before")
    @classmethod
    def _paper_per_language(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("per_language") is None:
            return data | {"per_language": 200 if data.get("selection") == "popular" else 100}
        return data


class Translation(BaseModel):
    """One question's translation into one target language and its check through English."""

    model_config = ConfigDict(extra="forbid")

    texts: Texts = Field(description="The translated question, answer and context.")
    pivot: PivotCheck = Field(description="The back-translation and its scores.")


class BuiltQuestion(BaseModel):
    """One generated question with its translations: a line of questions.jsonl."""

    model_config = ConfigDict(extra="forbid")

    q_id: str = Field(description="The question's id: the id of the document it was written from.")
    original_lang: str = Field(description="The source language: the language of the article the question was "
                                           "written from (the main set: the only one of the set it is in).")
    title: str = Field(description="The article's title, in the source language.")
    url: str | None = Field(description="The article's address, when the collection gives one.")
    line: int = Field(description="1-based line of the article in the collection.")
    source: Texts = Field(description="The generated question and answer and the context, in the source language.")
    english: Texts | None = Field(description="The English version the back-translations into English are "
                                              "compared with; None when the source is English (the source is).")
    translations: dict[str, Translation] = Field(description="Target language -> its translation: every language of "
                                                 "the set that lacks the article (the main set: every other one).")


class BuildSummary(BaseModel):
    """build.json: what the build did and what it cost."""

    model_config = ConfigDict(extra="forbid")

    filters: dict[str, FilterCounts] = Field(description="Per language of the set: what each filter dropped.")
    other_languages: int = Field(description="Documents in languages outside the set (ignored).")
    selection: str = Field(description="The selection the articles were taken by (BuildConfig.selection).")
    questions: int = Field(description="Questions generated (one per kept article whose output was valid).")
    invalid: dict[str, int] = Field(description="Outputs still invalid after retries, per step.")
    flagged_rows: int = Field(description="Translated rows the pivot check flagged for review.")
    calls: int = Field(description="Requests sent to the model by this invocation (cache hits not counted).")
    cached_calls: int = Field(description="Requests answered from the cache by this invocation.")
    cost_usd_this_run: float = Field(description="What this invocation spent (cache hits cost nothing).")
    cost_usd_total: float = Field(description="What the set's outputs cost to produce, cached ones included.")
