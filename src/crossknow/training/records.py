"""The records `crossknow train` saves: its config (config.yaml), the examples it built, and its summary."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from crossknow.data.schemas import Record
from crossknow.training.layers import LAYER_SPEC

KnowledgeRecipe = Literal["documents", "instruction"]
TransferRecipe = Literal["none", "documents", "translation", "romanisation", "roman2en"]


class TrainConfig(Record):
    """Everything that decides a training run's result (saved as config.yaml)."""

    model: str = Field(default="default", description="Model spec to start from: default or hf:PATH_OR_ID[@REVISION].")
    corpus: str = Field(description="Knowledge-injection corpus C_K: JSONL documents (id, lang, text, metadata).")
    langs: list[str] = Field(
        default_factory=lambda: ["en"], min_length=1, description="Languages of the C_K documents to train on."
    )
    recipe: KnowledgeRecipe = Field(
        default="documents",
        description="C_K recipe: 'documents' (raw text) or 'instruction' (raw text plus reading-comprehension "
        "instructions, Appendix A.4.1).",
    )
    transfer_corpus: str | None = Field(
        default=None, description="Cross-lingual transfer corpus C_T (JSONL documents); must not share pairs with C_K."
    )
    transfer_recipe: TransferRecipe = Field(
        default="none",
        description="C_T recipe: 'documents' (raw text), 'translation' (both directions of every pair), "
        "'romanisation' (romaji -> Japanese script), 'roman2en' (romaji Japanese -> English), or 'none'.",
    )
    epochs: float = Field(
        default=1.0, gt=0, description="Passes over the mixed corpus (ignored when max_steps is set)."
    )
    max_steps: int | None = Field(default=None, ge=1, description="Optimizer steps to train; overrides epochs.")
    learning_rate: float = Field(default=2e-5, gt=0, description="Peak learning rate (Appendix A.4.2: 2e-5).")
    min_learning_rate: float = Field(default=2e-6, ge=0, description="Learning rate at the end of the cosine decay.")
    warmup_ratio: float = Field(default=0.0, ge=0, lt=1, description="Fraction of steps with linear warm-up.")
    weight_decay: float = Field(default=0.1, ge=0, description="AdamW weight decay (Appendix A.4.2: 0.1).")
    max_grad_norm: float = Field(default=1.0, gt=0, description="Gradient clipping norm (Appendix A.4.2: 1.0).")
    batch_size: int = Field(default=8, ge=1, description="Sequences per device per forward pass.")
    grad_accum: int = Field(default=1, ge=1, description="Forward passes per optimizer step.")
    max_length: int = Field(default=512, ge=8, description="Tokens per sequence; longer examples are truncated.")
    save_every_steps: int | None = Field(default=None, ge=1, description="Save a checkpoint every N optimizer steps.")
    save_every_tokens: int | None = Field(
        default=None, ge=1, description="Save a checkpoint each time N more (non-padding) tokens have been seen."
    )
    train_layers: str = Field(
        default="all",
        description="Parameters that train: 'all', 'blocks' (decoder blocks and final norm; embeddings frozen), "
        "or 'last:N' (the last N decoder blocks and the final norm).",
    )
    seed: int = Field(default=0, description="Seed of the data order, template draws, shuffling and initialisation.")
    device: str = Field(default="auto", description="'auto' (CUDA when present), 'cpu' or 'cuda'.")
    dtype: Literal["float32", "bfloat16"] = Field(
        default="float32",
        description="float32, or bfloat16 mixed precision (float32 master weights; CPUs with AMX run it faster).",
    )

    @field_validator("train_layers")
    @classmethod
    def _layer_spec(cls, spec: str) -> str:
        # Checked here, before the run directory is written and the model loaded; the block count is
        # checked against the model by select_trainable.
        match = LAYER_SPEC.match(spec)
        if not match or (match.group(2) is not None and int(match.group(2)) < 1):
            raise ValueError(f"{spec!r}: use all, blocks, or last:N with N >= 1")
        return spec

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        if (self.transfer_corpus is None) != (self.transfer_recipe == "none"):
            raise ValueError("give --transfer-corpus and --transfer-recipe together (or neither)")
        if self.save_every_steps and self.save_every_tokens:
            raise ValueError("give --save-every-steps or --save-every-tokens, not both")
        return self


class TrainingExample(Record):
    """One training text (a line of train_data.jsonl)."""

    id: str = Field(description="Unique id: '<document id>:<kind>'.")
    part: Literal["knowledge", "transfer"] = Field(description="C_K (knowledge injection) or C_T (transfer).")
    kind: str = Field(description="'document', an instruction type, 'translation', 'romanisation' or 'roman2en'.")
    doc_id: str = Field(description="The document it was built from.")
    template_index: int | None = Field(description="The template drawn, for instructions; None for raw documents.")
    text: str = Field(description="The text the model trains on.")


class TrainSummary(Record):
    """train_summary.json: what a finished training run did."""

    steps: int = Field(description="Optimizer steps taken in total.")
    tokens_seen: int = Field(description="Non-padding tokens seen in total.")
    examples: dict[str, int] = Field(description="Training texts per part and kind, e.g. 'knowledge/document'.")
    trainable_parameters: int = Field(description="Parameters that were updated.")
    total_parameters: int = Field(description="All parameters of the model.")
    checkpoints: list[int] = Field(description="Steps of the saved checkpoints (checkpoints/checkpoint-STEP).")
    seconds: float = Field(
        description="Wall-clock seconds of the last invocation (a resumed run counts only its part)."
    )
