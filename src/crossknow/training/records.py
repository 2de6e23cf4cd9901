"""The records `crossknow train` saves: its config (config.yaml), the texts it trained on, the question-answer
pairs it asked for, and its summary."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from crossknow.data.schemas import Record
from crossknow.errors import CrossknowError
from crossknow.models.access import GENERATING, ModelRole, RoleConfig, RoleKeys
from crossknow.models.device import TRAIN_DEVICE_HELP, TrainDevice
from crossknow.models.registry import check_spec
from crossknow.store.config_keys import DEFAULT_BEFORE, VOLATILE
from crossknow.training.layers import check_layer_spec

KnowledgeRecipe = Literal["documents", "instruction"]
TransferRecipe = Literal["none", "documents", "translation", "romanisation", "roman2en", "roman2en_native"]
QAPromptForm = Literal["auto", "chat", "fields"]
"""How the question-answer pairs are asked (crossknow.training.qa_pairs): 'chat' (one JSON request per document),
'fields' (few-shot prompts, one short field per call, for base models) or 'auto' (fields for a local model without
a chat template, such as the embedded default; chat otherwise)."""
RejectRule = Literal[
    "not_a_question", "refers_to_document", "copies_document", "repeated_question", "short_answer", "copied_answer",
    "echoes_example", "invalid_output",
]
"""Why a question-answer pair was rejected (crossknow.training.qa_checks; 'invalid_output': a field the model never
wrote validly)."""
Packing = Literal["masked", "unmasked", "none"]
Part = Literal["knowledge", "transfer"]

LoraRank = Annotated[int | None, DEFAULT_BEFORE, Field(
    ge=1, description="Train LoRA adapters of this rank (through peft) instead of the weights; unset: the weights "
    "themselves. Checkpoints then hold the adapters, which scoring merges into the base model.")]
LoraAlpha = Annotated[float | None, DEFAULT_BEFORE, Field(
    gt=0, description="LoRA's scaling numerator (the update is scaled by alpha / rank); unset: twice the rank "
    "(crossknow's choice).")]
LoraTargets = Annotated[str, DEFAULT_BEFORE, Field(
    description="The modules that get adapters: 'all-linear' (every linear layer of the decoder blocks, crossknow's "
    "choice), 'auto' (peft's choice for the architecture) or comma-separated module names (q_proj,v_proj).")]


def check_lora(rank: int | None, alpha: float | None, targets: str, train_layers: str) -> None:
    """A ValueError for LoRA settings that do not go together."""
    if rank is not None and train_layers != "all":
        raise ValueError("--lora-rank puts adapters on every decoder block; --train-layers must be all")
    if rank is None and (alpha is not None or targets != "all-linear"):
        raise ValueError("--lora-alpha and --lora-targets need --lora-rank")


def check_report_to(names: list[str]) -> list[str]:
    """`names` if each is a Trainer integration that is installed; else a ValueError that says which are."""
    if not names:
        return names
    from transformers.integrations.integration_utils import (
        INTEGRATION_TO_CALLBACK,
        get_available_reporting_integrations,
    )

    installed = get_available_reporting_integrations()
    for name in names:
        if name not in INTEGRATION_TO_CALLBACK:
            raise ValueError(f"{name!r} is no integration of transformers' Trainer (it has "
                             f"{', '.join(sorted(INTEGRATION_TO_CALLBACK))})")
        if name not in installed:
            raise ValueError(f"{name!r} is not installed here (installed: {', '.join(installed) or 'none'}); "
                             f"install its package, e.g. pip install {name}")
    return names


GradientCheckpointing = Annotated[bool, VOLATILE, Field(
    description="Recompute the decoder blocks' activations in the backward pass instead of keeping them: less memory "
    "for about one more forward pass per step, the same losses (transformers' non-reentrant checkpointing).")]
ReportTo = Annotated[list[str], VOLATILE, AfterValidator(check_report_to), Field(
    default_factory=list, description="Where the Trainer also logs: tensorboard, wandb, mlflow or any other "
    "integration of transformers' Trainer that is installed (repeat for several; unset: none). The run's own step log "
    "is always written.")]
"""The engine options that `train` and `pitfalls finetune` share (with the LoRA ones above)."""


class TrainConfig(RoleConfig):
    """Everything that decides a training run's result (saved as config.yaml)."""

    ROLES = (RoleKeys("qa_generator", prefix="qa_",
                      own=("base_url", "api_key_env", "device", "concurrency", "timeout_s", *GENERATING)),)

    model: str = Field(default="default", description="Model spec to start from: default or hf:PATH_OR_ID[@REVISION].")
    corpus: str = Field(description="Knowledge-injection corpus C_K: JSONL documents (id, lang, text, metadata), or "
                        "a dataset split on the Hub with those fields (hf:ORG/NAME[@REVISION][:SPLIT]).")
    langs: list[str] = Field(
        default_factory=lambda: ["en"], min_length=1, description="Languages of the C_K documents to train on."
    )
    recipe: KnowledgeRecipe = Field(
        default="documents",
        description="C_K recipe: 'documents' (raw text) or 'instruction' (raw text plus reading-comprehension "
        "instructions and LLM-written question-answer pairs, Appendix A.4.1).",
    )
    qa_generator: ModelRole | None = Field(
        default=None,
        description="Generator spec that writes the instruction recipe's question-answer pairs (Appendix A.4.1(2)): "
        "default, hf:PATH, gguf:FILE, llamacpp:FILE or openai:MODEL@URL (openai:MODEL: on --qa-base-url).",
    )
    qa_pairs: int = Field(
        default=5, ge=0,
        description="Question-answer pairs asked per C_K document (Appendix A.4.1(2): 5); 0 leaves that half of the "
        "instruction recipe out (crossknow's option).",
    )
    qa_prompt_form: QAPromptForm | None = Field(
        default=None,
        description="Deprecated (kept so that older configs load): the pairs are asked in the prompt format of the "
        "question-answer generator (a local model without a chat template, such as the embedded default, by "
        "completion; a spec suffix #chat or #completion chooses). 'chat' here means the suffix #chat, 'fields' "
        "#completion, 'auto' none.",
    )
    qa_max_tokens: int = Field(
        default=1024, ge=16,
        description="Most tokens of one question-answer output: the JSON object (chat), or one question or answer "
        "(fields; at most 128 there).",
    )
    qa_cache: Annotated[str | None, VOLATILE] = Field(
        default=None,
        description="SQLite request cache of the question-answer calls (unset: the user's cache directory).",
    )
    transfer_corpus: str | None = Field(
        default=None,
        description="Cross-lingual transfer corpus C_T (JSONL documents); it may be the C_K file itself, less "
        "the evaluation documents (exclude_eval).",
    )
    transfer_recipe: TransferRecipe = Field(
        default="none",
        description="C_T recipe: 'documents' (raw text), 'translation' (both directions of every pair), "
        "'romanisation' (romaji -> Japanese script), 'roman2en' (romaji Japanese <-> English, both directions), "
        "'roman2en_native' (romaji -> English plus romaji -> Japanese script) or 'none'.",
    )
    transfer_langs: list[str] | None = Field(
        default=None, min_length=1,
        description="Languages of the C_T documents to build from (e.g. ja for the paper's Medical-Japanese); "
        "unset: every language of --transfer-corpus.",
    )
    exclude_eval: list[str] | None = Field(
        default=None, min_length=1,
        description="AdaXEval evaluation sets (JSONL, metadata.docid per item) whose source documents, and their "
        "translations, are left out of C_T (section 6.1(2)); listed in transfer_excluded.json.",
    )
    tokens_knowledge: int | None = Field(
        default=None, ge=1,
        description="Token budget of C_K (section 6.1(3): 0.5B): texts sampled with the seed until exactly this many "
        "tokens; unset: all of C_K.",
    )
    tokens_transfer: int | None = Field(
        default=None, ge=1,
        description="Token budget of C_T (section 6.1(3): 0.5B), sampled like --tokens-knowledge; unset: all of C_T.",
    )
    epochs: float = Field(
        default=1.0, gt=0, description="Passes over the mixed corpus (ignored when max_steps is set)."
    )
    max_steps: int | None = Field(default=None, ge=1, description="Optimizer steps to train; overrides epochs.")
    learning_rate: float = Field(default=2e-5, gt=0, description="Peak learning rate (Appendix A.4.2: 2e-5).")
    min_learning_rate: float = Field(
        default=2e-6, ge=0, description="Learning rate at the end of the decay (Appendix A.4.2: 2e-6)."
    )
    warmup_ratio: float = Field(default=0.0, ge=0, lt=1, description="Fraction of steps with linear warm-up.")
    weight_decay: float = Field(default=0.1, ge=0, description="Weight decay (Appendix A.4.2: 0.1).")
    max_grad_norm: float = Field(default=1.0, gt=0, description="Gradient clipping norm (Appendix A.4.2: 1.0).")
    batch_size: int = Field(
        default=32, ge=1, description="Sequences per optimizer step over all processes: the global batch "
        "(Appendix A.4.2: 32)."
    )
    micro_batch_size: int = Field(
        default=1, ge=1,
        description="Sequences per process per forward pass (Appendix A.4.2: 1); gradient accumulation makes up the "
        "global batch.",
    )
    max_length: int = Field(default=4096, ge=8, description="Tokens per training sequence (Appendix A.4.2: 4096).")
    packing: Packing = Field(
        default="masked",
        description="'masked': texts packed into max_length sequences, each attending only to itself; 'unmasked': "
        "packed, attention crosses texts; 'none': one text per sequence, cut at max_length and padded.",
    )
    save_every_steps: int | None = Field(default=None, ge=1, description="Save a checkpoint every N optimizer steps.")
    save_every_tokens: int | None = Field(
        default=None, ge=1, description="Save a checkpoint each time N more (non-padding) tokens have been seen."
    )
    train_layers: str = Field(
        default="all",
        description="Parameters that train: 'all', 'blocks' (decoder blocks and final norm; embeddings frozen), "
        "or 'last:N' (the last N decoder blocks and the final norm).",
    )
    seed: int = Field(
        default=0,
        description="Seed of the token budgets' samples, template draws, the mix's order, shuffling and "
        "initialisation.",
    )
    device: Annotated[TrainDevice, VOLATILE] = Field(default="auto", description=TRAIN_DEVICE_HELP)
    dtype: Literal["float32", "bfloat16"] = Field(
        default="float32",
        description="float32, or bfloat16 mixed precision (float32 master weights; CPUs with AMX run it faster).",
    )
    gradient_checkpointing: GradientCheckpointing = False
    report_to: ReportTo
    lora_rank: LoraRank = None
    lora_alpha: LoraAlpha = None
    lora_targets: LoraTargets = "all-linear"

    @field_validator("train_layers")
    @classmethod
    def _layer_spec(cls, spec: str) -> str:
        return check_layer_spec(spec)  # before the run directory is written and the model loaded

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        if (self.transfer_corpus is None) != (self.transfer_recipe == "none"):
            raise ValueError("give --transfer-corpus and --transfer-recipe together (or neither)")
        for name, value in (("tokens-transfer", self.tokens_transfer), ("transfer-langs", self.transfer_langs),
                            ("exclude-eval", self.exclude_eval)):
            if value is not None and self.transfer_corpus is None:
                raise ValueError(f"--{name} needs --transfer-corpus")
        check_lora(self.lora_rank, self.lora_alpha, self.lora_targets, self.train_layers)
        if self.save_every_steps and self.save_every_tokens:
            raise ValueError("give --save-every-steps or --save-every-tokens, not both")
        if self.batch_size % self.micro_batch_size:
            raise ValueError(f"--batch-size {self.batch_size} is not a multiple of --micro-batch-size "
                             f"{self.micro_batch_size}")
        if self.asks_qa_pairs and self.qa_generator is None:
            raise ValueError("the instruction recipe's question-answer half (Appendix A.4.1(2)) needs --qa-generator "
                             "SPEC; --qa-pairs 0 leaves it out")
        if self.qa_generator is not None:
            if not self.asks_qa_pairs:
                raise ValueError("--qa-generator is used only by --recipe instruction with --qa-pairs above 0")
            try:
                check_spec(self.qa_generator.spec, self.qa_generator.base_url, "generator",
                           server_flag="--qa-base-url")
            except CrossknowError as error:
                raise ValueError(f"--qa-generator: {error}") from error
        return self

    @property
    def asks_qa_pairs(self) -> bool:
        """True when the C_K recipe includes LLM-written question-answer pairs."""
        return self.recipe == "instruction" and self.qa_pairs > 0


class TrainingExample(Record):
    """One training text as a recipe built it."""

    id: str = Field(description="Unique id: '<document id>:<kind>', and ':<n>' after it for the n-th question-answer "
                    "pair (from 1).")
    part: Part = Field(description="C_K (knowledge injection) or C_T (transfer).")
    kind: str = Field(
        description="'document', an instruction type, 'qa_pair' (one question-answer pair), 'translation', "
        "'romanisation' or 'roman2en' (roman2en_native builds the last two)."
    )
    doc_id: str = Field(description="The document it was built from.")
    template_index: int | None = Field(description="The template drawn, for instructions; None for raw documents.")
    text: str = Field(description="The text the model trains on.")


class TrainedText(TrainingExample):
    """One text the run trained on (a line of train_data.jsonl, in the mix's order)."""

    full_tokens: int = Field(description="Tokens of the whole text: the tokenizer's special tokens, the text, EOS.")
    tokens: int = Field(
        description="Tokens trained on: the first `tokens` of those; fewer than full_tokens where the token budget "
        "(or max_length, with packing 'none') cut the text."
    )


class PartTokens(Record):
    """How much of one corpus went into training: a row of the stage table."""

    texts_built: int = Field(description="Texts the recipe built from the corpus.")
    tokens_built: int = Field(description="Their tokens (with packing 'none', each cut at max_length).")
    budget: int | None = Field(description="The token budget (--tokens-knowledge or --tokens-transfer); None: all.")
    texts: int = Field(description="Texts trained on, the one cut by the budget included.")
    tokens: int = Field(description="Tokens trained on: the budget exactly, or tokens_built without one.")
    cut: int = Field(description="Texts the budget cut short (0 or 1).")


class QAPair(Record):
    """One knowledge question about a document's facts and its answer."""

    question: str = Field(
        min_length=1, description="A question that makes sense without the document (crossknow.training.qa_checks)."
    )
    answer: str = Field(min_length=1, description="Its answer: a statement, not a few words copied from the document.")

    @field_validator("question", "answer")
    @classmethod
    def _has_words(cls, text: str) -> str:
        # A placeholder such as "..." (copied from a format description by a small model) is no pair.
        if not any(character.isalnum() for character in text):
            raise ValueError(f"{text!r} holds no word")
        return text.strip()


class RejectedPair(Record):
    """A question-answer pair the model wrote that failed a rule of crossknow.training.qa_checks: recorded, not used."""

    question: str = Field(description="The question as written ('' when no valid question was written).")
    answer: str | None = Field(description="The answer as written; None when the question was rejected before it.")
    rule: RejectRule = Field(description="The rule it failed.")
    reason: str = Field(description="Why, in words (the measured length or the words that refer to the document).")


class QARecord(Record):
    """The question-answer pairs asked for one C_K document (a line of qa_pairs.jsonl)."""

    doc_id: str = Field(description="The document.")
    lang: str = Field(description="Its language (the prompt's language).")
    pairs: list[QAPair] = Field(description="The pairs kept: at most --qa-pairs; empty when the output was invalid.")
    rejected: list[RejectedPair] = Field(
        default_factory=list, description="The pairs the model wrote that failed a rule, with the reason."
    )
    error: str | None = Field(
        description="Why the output was invalid after all attempts (chat: no valid JSON, or every pair rejected; "
        "fields: the first question); None when valid."
    )
    attempts: int = Field(description="Model calls made for the document, cached ones included.")
    cached: bool = Field(description="True when every call came from the request cache.")


class QASummary(Record):
    """What the question-answer half of the instruction recipe produced."""

    generator: str = Field(description="'backend:model id' of the generator.")
    documents: int = Field(description="Documents asked.")
    complete: int = Field(description="Documents with all the pairs asked for.")
    partial: int = Field(description="Documents with fewer pairs than asked (the paper notes this happens).")
    invalid: int = Field(description="Documents whose output was invalid after all attempts (no pairs; recorded).")
    rejected: dict[str, int] = Field(
        default_factory=dict, description="Pairs rejected per rule (crossknow.training.qa_checks; in qa_pairs.jsonl)."
    )
    prompt_form: Literal["chat", "completion", "fields"] = Field(
        default="chat",
        description="The prompt format the pairs were asked in: 'chat' (one JSON request per document) or "
        "'completion' (few-shot fields); 'fields' in runs of older versions (the same as completion).",
    )
    calls_this_run: int = Field(description="Model calls this invocation sent (cache misses).")
    cached_calls_this_run: int = Field(description="Model calls this invocation answered from the cache.")


class TrainSummary(Record):
    """train_summary.json: what a finished training run did."""

    steps: int = Field(description="Optimizer steps taken in total.")
    tokens_seen: int = Field(description="Non-padding tokens seen in total.")
    examples: dict[str, int] = Field(description="Texts trained on per part and kind, e.g. 'knowledge/document'.")
    parts: dict[str, PartTokens] = Field(
        description="Per part ('knowledge', 'transfer'): texts and tokens that went in."
    )
    sequences: int = Field(description="Training sequences the texts were packed (or cut) into.")
    qa: QASummary | None = Field(description="The question-answer pairs, when the recipe asked for them.")
    trainable_parameters: int = Field(description="Parameters that were updated.")
    total_parameters: int = Field(description="All parameters of the model.")
    transfer_excluded: int | None = Field(
        default=None,
        description="C_T documents left out as evaluation documents or their translations (transfer_excluded.json "
        "lists them); None without --exclude-eval.",
    )
    checkpoints: list[int] = Field(description="Steps of the saved checkpoints (checkpoints/checkpoint-STEP).")
    seconds: float = Field(
        description="Wall-clock seconds of the last invocation (a resumed run counts only its part)."
    )
    load_seconds: float | None = Field(
        default=None, description="Of `seconds`, those spent making the model ready: converting it (once) and "
        "loading it; None in runs written before it was counted."
    )
