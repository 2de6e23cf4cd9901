"""The records `crossknow generate` saves: its config, one record per input of each stage, and the summary."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from crossknow.data.schemas import Record
from crossknow.models.access import GENERATING, ModelRole, ModelsRole, RoleConfig, RoleKeys
from crossknow.store.config_keys import VOLATILE

Status = Literal["kept", "dropped", "invalid"]
"""What a stage did with one input: passed it on, filtered it out, or could not get a valid LLM answer."""

FactRule = Literal["sum", "votes", "both"]
"""Which rule of fact detection keeps a sentence (see crossknow.adaxeval.facts)."""

FactOrder = Literal["paper", "reasoning_first"]
"""The order of a fact detector's answer fields: Appendix A.1's (factuality, triple, reason) or the reasoning first."""
DropReason = Literal["sum", "votes", "no_triple"]
"""Why fact detection dropped a sentence: it failed the sum rule, the votes rule, or passed but no detector
that said yes gave a triple."""

RejectCode = Literal[
    "object_not_in_sentence", "object_not_blanked", "ungrounded_answer", "ungrounded_cloze", "prompt_echo",
    "duplicate", "answer_in_question", "not_a_question", "too_few_options", "invalid_output",
]
"""Why a writer's output was rejected (crossknow.adaxeval.checks and the stages): a rejection's reason starts with
its code, 'code: why'; the summary counts rejections by code."""


class GenerateConfig(RoleConfig):
    """Everything that decides a generation run's output (config.yaml holds it, resolved)."""

    ROLES = (RoleKeys("detectors"), RoleKeys("writer"))
    SHARED = ("base_url", "api_key_env", "concurrency", "timeout_s", *GENERATING)

    corpus: str = Field(description="Corpus file: JSONL documents (id, lang, text, metadata.pair_id).")
    langs: list[str] = Field(
        default_factory=lambda: ["en", "ja"], min_length=2, max_length=2, description="The two languages of the pairs."
    )
    detectors: ModelsRole = Field(
        description="Generator specs of the fact detectors (the paper: three); an openai: spec may name its own "
        "server as openai:MODEL@URL.",
    )
    writer: ModelRole = Field(
        description="Generator spec that writes clozes, paraphrases and distractors and judges quality (the paper: "
        "GPT-4.1)."
    )
    ner: dict[str, str] = Field(
        default_factory=dict,
        description="NER backend per language: 'heuristic', 'spacy:MODEL', 'hf:DIR' or 'llm:SPEC' (unset: heuristic).",
    )
    fact_rule: FactRule = Field(
        default="sum",
        description="Which rule keeps a factual sentence: 'sum' (summed P(yes) above the threshold; the paper's "
        "section 3.2), 'votes' (at least min-yes detectors say yes; its Appendix A.1) or 'both' (crossknow's "
        "stricter combination). See crossknow.adaxeval.facts.",
    )
    threshold: float | None = Field(
        default=None,
        description="The sum rule: keep a sentence when its summed P(yes) exceeds this (unset: 2/3 of the detectors, "
        "the paper's 2 of 3).",
    )
    min_yes: int = Field(
        default=2, ge=0, description="The votes rule: detectors that must answer yes (capped at their number)."
    )
    fact_order: FactOrder = Field(
        default="paper",
        description="Order of a fact detector's answer fields: 'paper' (Appendix A.1: factuality, triple, reason; "
        "P(yes) read before any reasoning) or 'reasoning_first' (crossknow's option: P(yes) read after the "
        "reasoning). See crossknow.adaxeval.facts.",
    )
    sample: int | None = Field(
        default=None, ge=1, description="Sentences per language, drawn with `seed` from those that pass the NER filter."
    )
    docs: int | None = Field(default=None, ge=1, description="Document pairs, drawn with `seed` (unset: all).")
    seed: int = Field(default=0, description="Seed of the samples, of the option order and of LLM sampling.")
    quality_filter: bool = Field(
        default=True, description="Keep only items judged Good on cloze, paraphrase and options, with cross-language 2."
    )
    calibrate_yes: bool = Field(
        default=True,
        description="Calibrate a base model's exact P(yes) (completion form, a model that scores: fact detection and "
        "quality judgements) against the same prompt with content-free inputs (contextual calibration, Zhao et al., "
        "2021; crossknow's choice, not the paper's). Off: the model's raw P(yes) decides, as on the chat path. "
        "Records keep both values either way.",
    )
    max_tokens: int = Field(default=512, ge=16, description="Most tokens per LLM answer.")
    max_attempts: int = Field(
        default=3, ge=1,
        description="LLM calls per prompt before its output counts as invalid; also the rounds of asking again for "
        "a cloze, question or distractors that a stage's check rejected.",
    )
    temperature: float = Field(default=0.0, ge=0, description="Sampling temperature of every LLM call.")
    json_mode: Literal["auto", "json_schema", "json_object", "none"] = Field(
        default="auto", description="How openai: servers are asked for JSON (see crossknow.models.openai_generator)."
    )
    fold_system: Literal["auto", "yes", "no"] = Field(
        default="auto",
        description="Fold system messages into the first user message of openai: requests: 'auto' only on a "
        "llama-cpp-python server (asked at /v1/models), 'yes' always, 'no' never.",
    )
    prompts: str | None = Field(default=None, description="Directory of extra or replacing prompt files (LANG.yaml).")
    server_api_key_env: Annotated[str | None, VOLATILE] = Field(
        default=None,
        description="Deprecated: the key variable of the servers named in specs (now --api-key-env, for every "
        "server).",
    )
    cache: Annotated[str | None, VOLATILE] = Field(
        default=None, description="SQLite request cache (unset: the user's cache directory)."
    )
    prices: Annotated[str | None, VOLATILE] = Field(
        default=None, description="YAML/JSON file of model prices (USD per 1M tokens)."
    )
    batch_size: Annotated[int, VOLATILE] = Field(
        default=16, ge=1, description="Inputs per committed shard; does not change the output."
    )

    def deprecations(self) -> list[str]:
        """What this config sets through options that are no longer the way, each with the new way."""
        if self.server_api_key_env is None:
            return []
        return [f"--server-api-key-env is deprecated and will be removed in the next release (used this time: "
                f"{self.server_api_key_env} holds the key of the servers named in specs); --api-key-env names the "
                "key variable of every server, whether a spec names it (openai:MODEL@URL) or --base-url does"]

    @field_validator("langs")
    @classmethod
    def _distinct(cls, langs: list[str]) -> list[str]:
        if len(set(langs)) != len(langs) or any(not lang.strip() for lang in langs):
            raise ValueError(f"two distinct languages are needed, got {langs}")
        return langs


class CallInfo(Record):
    """What one prompt cost and how it ended."""

    model: str = Field(description="Generator spec that answered.")
    attempts: int = Field(description="Model calls made for the prompt, cached ones included.")
    cached: bool = Field(description="True when every call came from the request cache.")
    prompt_tokens: int = Field(description="Prompt tokens over all attempts.")
    completion_tokens: int = Field(description="Completion tokens over all attempts.")
    cost_usd: float = Field(description="USD at the run's prices (the same whether or not cached).")
    error: str | None = Field(default=None, description="Why the output is invalid; None when valid.")
    raw_text: str | None = Field(default=None, description="The last raw output, kept when it was invalid.")


class SentenceRecord(Record):
    """One sentence of a document (stage 'split')."""

    id: str = Field(description="Sentence id: '{doc_id}#{index}'; unique in the run.")
    doc_id: str = Field(description="Id of the document it comes from.")
    pair_id: str = Field(description="Pair id of that document.")
    lang: str = Field(description="Language of the sentence.")
    index: int = Field(description="0-based position of the sentence in its document.")
    text: str = Field(description="The sentence.")


class SplitRecord(Record):
    """The sentences of one document (stage 'split')."""

    doc_id: str = Field(description="The document.")
    lang: str = Field(description="Its language.")
    sentences: list[SentenceRecord] = Field(description="Its sentences, in order.")


class EntityRecord(Record):
    """The entities found in one sentence (stage 'ner')."""

    sentence: SentenceRecord = Field(description="The sentence.")
    entities: list[str] = Field(description="Distinct entities found, in order of appearance.")
    ner: str = Field(description="NER backend spec that found them.")
    call: CallInfo | None = Field(default=None, description="The LLM call, for an llm: backend.")


class Triple(Record):
    """A fact as <subject, relation, object>."""

    subject: str = Field(min_length=1, description="What the fact is about.")
    relation: str = Field(min_length=1, description="How subject and object relate.")
    object: str = Field(min_length=1, description="The other end of the relation; the usual answer.")

    @model_validator(mode="after")
    def _not_blank(self) -> Triple:
        if not (self.subject.strip() and self.relation.strip() and self.object.strip()):
            raise ValueError("subject, relation and object must not be blank")
        return self


class DetectorVote(Record):
    """One detector's answer about one sentence."""

    detector: str = Field(description="Generator spec of the detector.")
    factuality: Literal["yes", "no"] | None = Field(description="Its answer; None when its output was invalid.")
    confidence: float | None = Field(
        description="The vote's confidence, what the sum rule adds up: P('yes') of the factuality answer, calibrated "
        "against `yes_baseline` where that is set (completion form, exact P(yes), --calibrate-yes; crossknow's "
        "choice), else as the model gave it; rounded to 6 decimals. None when invalid."
    )
    raw_yes_probability: float | None = Field(
        default=None,
        description="P('yes') of the factuality answer as the model gave it, before any calibration (equal to "
        "`confidence` where not calibrated; the chat path never calibrates). None when invalid and in records "
        "written before crossknow kept it.",
    )
    yes_baseline: float | None = Field(
        default=None,
        description="Completion form, exact P(yes) only: P('yes') of the fact prompt with content-free inputs, which "
        "`confidence` is calibrated against (see crossknow.adaxeval.facts_completion); None where not calibrated.",
    )
    triple: Triple | None = Field(description="The triple it extracted (None when it said no or was invalid).")
    reasoning: str | None = Field(
        description="Its reason: written after its answer under --fact-order paper, before it under reasoning_first; "
        "None when invalid."
    )
    call: CallInfo = Field(description="The call.")


class FactRecord(Record):
    """The detectors' verdict on one sentence (stage 'facts')."""

    sentence: SentenceRecord = Field(description="The sentence.")
    votes: list[DetectorVote] = Field(description="One vote per detector, in the order of --detector.")
    confidence_sum: float = Field(description="Sum of the valid votes' P('yes').")
    yes_votes: int = Field(description="Valid votes that said yes.")
    passes_sum: bool = Field(description="Whether confidence_sum exceeds the threshold (the sum rule), applied or not.")
    passes_votes: bool = Field(description="Whether yes_votes reaches --min-yes (the votes rule), applied or not.")
    dropped_by: list[DropReason] = Field(
        default_factory=list,
        description="Why the sentence was dropped: the applied rules it failed ('sum', 'votes'), or 'no_triple' "
        "when it passed but no yes vote gave a triple; empty when kept or when no vote was valid.",
    )
    triple: Triple | None = Field(description="The final triple (see facts.choose_triple); None when not kept.")
    chosen: int | None = Field(description="Index of the vote whose triple was chosen.")


class RejectedAnswer(Record):
    """A valid answer of the writer that a stage's check rejected, and why; the writer was asked again."""

    text: str = Field(description="The rejected cloze or question.")
    reason: str = Field(description="Why it was rejected.")
    round: int = Field(ge=0, description="0-based round of asking in which the writer gave it.")


class RejectedTriple(Record):
    """A well-formed triple of the writer that stage 'triples' rejected, and why; the writer was asked again."""

    triple: Triple = Field(description="The rejected triple.")
    reason: str = Field(description="Why it was rejected (its object does not occur in the sentence).")
    round: int = Field(ge=0, description="0-based round of asking in which the writer gave it.")


class TripleRecord(Record):
    """The triple the writer regenerated for one factual sentence, beside the detector's (stage 'triples';
    see crossknow.adaxeval.triples)."""

    fact: FactRecord = Field(
        description="The fact detection verdict; its `triple` is the detector's triple, which the writer was given "
        "as the reference."
    )
    triple: Triple | None = Field(
        description="The writer's regenerated triple, which the cloze, the answer and the quality judgement use; "
        "None when the row is invalid."
    )
    rejected: list[RejectedTriple] = Field(
        default_factory=list, description="Triples rejected because their object did not occur in the sentence."
    )
    call: CallInfo = Field(description="The call (all rounds).")

    @property
    def detector_triple(self) -> Triple | None:
        """The triple fact detection chose (the reference the writer was given)."""
        return self.fact.triple


class ClozeRecord(Record):
    """The cloze written for one fact: the regenerated triple's object replaced by [BLANK] (stage 'cloze')."""

    triple_record: TripleRecord = Field(description="The fact with the regenerated triple it was written from.")
    reasoning: str = Field(description="The writer's reasoning, written before the cloze ('' when invalid).")
    cloze: str = Field(description="The sentence with exactly one [BLANK] in place of the regenerated triple's object.")
    answer: str = Field(description="The text that fills [BLANK]: the regenerated triple's object.")
    cloze_similarity: float = Field(
        description="difflib ratio of the filled cloze to the sentence (1 = the same text): how close it stays."
    )
    rejected: list[RejectedAnswer] = Field(
        default_factory=list, description="Clozes rejected because the object was not what [BLANK] replaced."
    )
    call: CallInfo = Field(description="The call (all rounds).")

    @property
    def fact(self) -> FactRecord:
        """The fact detection verdict (the sentence, the votes and the detector's triple)."""
        return self.triple_record.fact

    @property
    def triple(self) -> Triple:
        """The regenerated triple the cloze was written from."""
        if self.triple_record.triple is None:
            raise AssertionError(f"cloze of {self.fact.sentence.id} has no regenerated triple")
        return self.triple_record.triple


class QueryRecord(Record):
    """The paraphrased question written from one cloze (stage 'paraphrase'), with the cloze it came from."""

    cloze_record: ClozeRecord = Field(description="The cloze it paraphrases.")
    reasoning: str = Field(description="The writer's reasoning, written before the question ('' when invalid).")
    question: str = Field(description="The paraphrased question asking for the answer.")
    rejected: list[RejectedAnswer] = Field(
        default_factory=list, description="Questions rejected because they contained the answer."
    )
    call: CallInfo = Field(description="The call (all rounds).")

    @property
    def fact(self) -> FactRecord:
        """The fact the cloze was written from."""
        return self.cloze_record.fact

    @property
    def triple(self) -> Triple:
        """The regenerated triple the cloze was written from."""
        return self.cloze_record.triple

    @property
    def cloze(self) -> str:
        """The cloze."""
        return self.cloze_record.cloze

    @property
    def answer(self) -> str:
        """The answer: the regenerated triple's object."""
        return self.cloze_record.answer

    @property
    def cloze_similarity(self) -> float:
        """How close the cloze stays to the sentence."""
        return self.cloze_record.cloze_similarity


class DroppedOption(Record):
    """An option the writer gave that is not a distractor, and why it was dropped."""

    text: str = Field(description="The option as the writer wrote it.")
    reason: Literal["empty", "equals the answer", "duplicate", "prompt echo"] = Field(
        description="Why it is not a distractor (equality ignores case, spaces and a final period; an echo is part "
        "of the prompt's own text, see crossknow.adaxeval.checks)."
    )
    round: int = Field(ge=0, description="0-based round of asking in which the writer gave it.")


class DistractorRecord(Record):
    """Three wrong options for one query (stage 'distractors')."""

    query: QueryRecord = Field(description="The query they were written for.")
    distractors: list[str] = Field(description="Three distinct wrong options (fewer when the row is invalid).")
    dropped: list[DroppedOption] = Field(
        default_factory=list, description="Options the writer gave that were dropped, in the order given."
    )
    length_ratio: float = Field(description="Mean distractor length / answer length, in characters (1 is ideal).")
    answer_longest: bool = Field(description="True when the answer is strictly longer than every distractor.")
    call: CallInfo = Field(description="The call.")


class QualityRecord(Record):
    """The writer's quality judgements of one item (stage 'quality')."""

    item: DistractorRecord = Field(description="The item judged.")
    cloze: Literal["Good", "Poor"] | None = Field(description="In-language judgement of the cloze.")
    paraphrase: Literal["Good", "Poor"] | None = Field(description="In-language judgement of the question.")
    options_cloze: Literal["Good", "Poor"] | None = Field(
        description="In-language judgement of the wrong options as fillers of the cloze's [BLANK]."
    )
    options_question: Literal["Good", "Poor"] | None = Field(
        description="In-language judgement of the wrong options as answers to the paraphrased question."
    )
    support: Literal[0, 1, 2] | None = Field(
        description="Does the paired document in the other language support question and answer (0, 1, 2)."
    )
    in_language_call: CallInfo = Field(description="The in-language call.")
    cross_language_call: CallInfo = Field(description="The cross-language call.")
    yes_probability: dict[str, float] = Field(
        default_factory=dict,
        description="Completion path only: the P(yes) each yes/no judgement (cloze, paraphrase, options_cloze, "
        "options_question, support) is graded by, Good (or support 2) when it is at least 0.5: calibrated against "
        "`yes_baseline` where that has the judgement (exact P(yes), --calibrate-yes; crossknow's choice), else as "
        "the model gave it; rounded to 6 decimals.",
    )
    raw_yes_probability: dict[str, float] = Field(
        default_factory=dict,
        description="Completion path only: each judgement's P(yes) as the model gave it, before any calibration. "
        "Empty on the chat path and in records written before crossknow kept it.",
    )
    yes_baseline: dict[str, float] = Field(
        default_factory=dict,
        description="Completion path, exact P(yes) only: each judgement's P(yes) with content-free inputs, which its "
        "`yes_probability` is calibrated against (see crossknow.adaxeval.filters); empty where not calibrated.",
    )


class StageCount(Record):
    """One row of the stage table (the paper's Table 1)."""

    stage: str = Field(description="Stage name.")
    label: str = Field(description="What the row counts.")
    counts: dict[str, int] = Field(description="Count per language.")
    invalid: dict[str, int] = Field(default_factory=dict, description="Inputs whose LLM output stayed invalid.")


class GenerateSummary(Record):
    """summary.json: the stage table, surface cues, cost and where the sets are."""

    counts: list[StageCount] = Field(description="Stage rows, in pipeline order.")
    unpaired_documents: int = Field(description="Documents in the languages without a complete pair (skipped).")
    length_ratio: dict[str, float | None] = Field(
        description="Per language, mean over final items of mean distractor length / answer length."
    )
    answer_longest: dict[str, float | None] = Field(
        description="Per language, share of final items whose answer is the longest option (chance: 0.25)."
    )
    binary_confidence: bool | None = Field(
        description="True when every valid detector confidence was exactly 0 or 1 (no log-probabilities to read), "
        "so that the sum rule kept only sentences more than 2/3 of the detectors (with three: all three) said yes "
        "to; None when there was no valid vote."
    )
    cost_usd: float = Field(description="USD of every call behind the run's records, cached ones at their price.")
    calls_this_run: int = Field(description="Model calls sent by this invocation (cache misses).")
    cached_calls_this_run: int = Field(description="Model calls this invocation answered from the cache.")
    files: dict[str, str] = Field(description="Output name -> path relative to the run directory.")
    rejections: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="Stage -> rejection code (records.RejectCode, or a dropped option's reason) -> outputs of the "
        "writer rejected, every round counted; 'invalid_output' counts inputs whose last output was malformed.",
    )
    models: dict[str, dict[str, str]] = Field(
        description="Generator spec -> {'model': 'backend:model id', 'prompt_format': 'chat' | 'completion'}, for the "
        "models this run used (its models.json)."
    )
    seconds: float = Field(description="Wall-clock seconds of this invocation.")
    crossknow_version: str = Field(description="crossknow's version.")
