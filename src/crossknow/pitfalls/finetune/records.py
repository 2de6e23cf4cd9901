"""The records of `crossknow pitfalls finetune`: its config (config.yaml), the training summary and metrics.json.

The defaults of the training settings are the paper's (Appendix B.1 and B.2): 4 epochs, learning rate
2.0e-4, a cosine schedule, warm-up ratio 0.1, per-device batch 1 with gradient accumulation over 8 steps
(an effective batch of 8), 10% of the training data as a validation set evaluated every 200 steps with a
per-device evaluation batch of 1.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from crossknow.data.schemas import Record
from crossknow.models.device import TRAIN_DEVICE_HELP, TrainDevice
from crossknow.pitfalls.eval_records import Answering
from crossknow.pitfalls.finetune.examples import PreferenceCounts
from crossknow.pitfalls.simulate import SIMULATION_MAX_TOKENS, SIMULATION_TEMPERATURE
from crossknow.scoring.rules import Rule
from crossknow.store.config_keys import VOLATILE
from crossknow.training.layers import check_layer_spec
from crossknow.training.records import (
    GradientCheckpointing,
    LoraAlpha,
    LoraRank,
    LoraTargets,
    ReportTo,
    check_lora,
)

Method = Literal["sft", "dpo"]


class PitfallsFinetuneConfig(Record):
    """Everything that decides a targeted fine-tuning run (saved as config.yaml)."""

    model: str = Field(default="default", description="Model to fine-tune and evaluate: default or "
                       "hf:PATH_OR_ID[@REVISION].")
    train_pairs: str = Field(description="Pair file of the training language (a released <Language>.json or a "
                             "crossknow item file); its target-language side is trained on.")
    method: Method = Field(default="sft", description="'sft' (the correct answer as the target, through crossknow "
                           "train's machinery) or 'dpo' (trl's DPOTrainer; rejected = the base model's wrong answer).")
    eval_pairs: list[str] = Field(default_factory=list, description="Pair files of the other languages to evaluate "
                                  "before and after (the training language is always evaluated).")
    answering: Answering = Field(default="loss", description="How the evaluations answer, and so the format "
                                 "trained on: 'loss' (the scoring rule's context and option) or 'generative' "
                                 "(the paper's templates and its final_answer output).")
    rule: Rule = Field(default="lm-eval", description="Scoring rule of loss-based answering (and of its training "
                       "texts).")
    limit: int | None = Field(default=None, ge=1, description="Use the first N pairs of --train-pairs (unset: all).")
    eval_limit: int | None = Field(default=None, ge=1, description="Evaluate the first N pairs of each --eval-pairs "
                                   "file (unset: all).")
    epochs: float = Field(default=4.0, gt=0, description="Passes over the training examples (the paper: 4).")
    max_steps: int | None = Field(default=None, ge=1, description="Optimizer steps to train; overrides --epochs.")
    learning_rate: float = Field(default=2.0e-4, gt=0, description="Peak learning rate of the cosine schedule "
                                 "(the paper: 2.0e-4).")
    warmup_ratio: float = Field(default=0.1, ge=0, lt=1, description="Fraction of steps with linear warm-up (the "
                                "paper: 0.1).")
    batch_size: int = Field(default=8, ge=1, description="Examples per optimizer step: per-device batch x gradient "
                            "accumulation (the paper: 1 x 8).")
    micro_batch_size: int = Field(default=1, ge=1, description="Examples per forward pass (the paper's per-device "
                                  "batch: 1).")
    validation_fraction: float = Field(default=0.1, ge=0, lt=1, description="Share of the training examples held "
                                       "out for validation (the paper: 10%).")
    eval_every_steps: int = Field(default=200, ge=1, description="Validation loss every N optimizer steps (the "
                                  "paper: 200); it is also computed once at the end.")
    save_every_steps: int = Field(default=200, ge=1, description="Checkpoint every N optimizer steps, to resume "
                                  "from (crossknow's choice: the paper's evaluation interval).")
    weight_decay: float = Field(default=0.0, ge=0, description="Weight decay (crossknow's choice: transformers' "
                                "default; the paper gives none).")
    beta: float = Field(default=0.1, gt=0, description="DPO's beta (trl's default; the paper gives none).")
    train_layers: str = Field(default="all", description="Parameters that train: 'all', 'blocks' or 'last:N' (as "
                              "in crossknow train).")
    seed: int = Field(default=0, description="Seed of the validation split, the data order, initialisation and "
                      "generative answering.")
    max_tokens: int = Field(default=SIMULATION_MAX_TOKENS, ge=1, description="Most tokens of one generative answer.")
    temperature: float = Field(default=SIMULATION_TEMPERATURE, ge=0, description="Temperature of generative "
                               "answering (the paper's 0.001).")
    max_attempts: int = Field(default=3, ge=1, description="Calls per question before its answer counts as invalid.")
    device: Annotated[TrainDevice, VOLATILE] = Field(default="auto", description=TRAIN_DEVICE_HELP)
    dtype: Literal["float32", "bfloat16"] = Field(default="float32", description="Training precision (bfloat16: "
                                                  "mixed precision) and the evaluations' compute dtype.")
    gradient_checkpointing: GradientCheckpointing = False
    report_to: ReportTo
    lora_rank: LoraRank = None
    lora_alpha: LoraAlpha = None
    lora_targets: LoraTargets = "all-linear"
    eval_batch_size: Annotated[int, VOLATILE] = Field(
        default=16, ge=1, description="Pairs per committed chunk of the evaluations; does "
        "not change the numbers."
    )
    cache: Annotated[str | None, VOLATILE] = Field(
        default=None, description="SQLite request cache of generative answering (unset: the "
        "user's cache directory)."
    )

    @field_validator("train_layers")
    @classmethod
    def _layer_spec(cls, spec: str) -> str:
        return check_layer_spec(spec)  # before the run directory is written and the model loaded

    @model_validator(mode="after")
    def _check(self) -> PitfallsFinetuneConfig:
        kind, _, rest = self.model.partition(":")
        if self.model != "default" and (kind != "hf" or not rest):
            raise ValueError(f"--model {self.model!r}: fine-tuning takes default or hf:PATH_OR_ID[@REVISION]")
        if self.batch_size % self.micro_batch_size:
            raise ValueError(f"--batch-size {self.batch_size} is not a multiple of --micro-batch-size "
                             f"{self.micro_batch_size}")
        check_lora(self.lora_rank, self.lora_alpha, self.lora_targets, self.train_layers)
        return self


class FinetuneSummary(Record):
    """train/finetune_summary.json: what the finished training stage did."""

    method: Method = Field(description="'sft' or 'dpo'.")
    train_examples: int = Field(description="Examples trained on.")
    validation_examples: int = Field(description="Examples held out for the validation loss.")
    steps: int = Field(description="Optimizer steps taken.")
    train_loss: float | None = Field(description="Training loss logged at the last step.")
    validation_loss: float | None = Field(description="Validation loss at the end; null without validation examples.")
    checkpoint: str = Field(description="The fine-tuned checkpoint, relative to the run directory.")
    trainable_parameters: int = Field(description="Parameters that were updated.")
    total_parameters: int = Field(description="All parameters of the model.")
    seconds: float = Field(description="Wall-clock seconds of the invocation that finished training.")


class LanguageRow(Record):
    """One row of Table 2: a language's target-language accuracy before and after fine-tuning."""

    lang: str = Field(description="The evaluated language's code.")
    pairs_file: str = Field(description="The pair file evaluated.")
    role: Literal["training", "held-out", "evaluation"] = Field(description="'training': the file trained on (its "
                                                                "training examples included); 'held-out': its "
                                                                "validation pairs only; 'evaluation': another file.")
    n_pairs: int = Field(description="Usable pairs evaluated.")
    n_compared: int = Field(description="Pairs whose target-language answer is valid before and after: the "
                            "accuracies' denominator.")
    n_invalid: int = Field(description="Pairs left out: an invalid target-language answer before or after.")
    original: float | None = Field(description="Target-language accuracy of the base model (the paper's Orig.).")
    enhanced: float | None = Field(description="Target-language accuracy of the fine-tuned model (Enh.).")
    diff: float | None = Field(description="enhanced - original (the paper's Diff.).")
    english_original: float | None = Field(description="English accuracy of the base model, on the pairs whose "
                                           "English answer is valid before and after.")
    english_enhanced: float | None = Field(description="English accuracy of the fine-tuned model, same pairs.")


class PitfallsFinetuneMetrics(Record):
    """metrics.json of `crossknow pitfalls finetune`: the paper's Table 2 for one model and method."""

    model: str = Field(description="The base model's spec.")
    method: Method = Field(description="'sft' or 'dpo'.")
    train_lang: str = Field(description="The training language's code.")
    rows: list[LanguageRow] = Field(description="The training language, its held-out pairs, then each other file.")
    preference: PreferenceCounts | None = Field(description="DPO: the pairs with and without a rejected answer.")
    training: FinetuneSummary = Field(description="The training stage.")
    calls: int = Field(description="Generative model calls of all evaluations (cache hits excluded).")
    cached_calls: int = Field(description="Generative model calls answered from the request cache.")
    tokens: int = Field(description="Prompt and completion tokens of those calls.")
    cost_usd: float = Field(description="What those calls cost (local models: 0).")
    seconds: float = Field(description="Wall-clock seconds of this invocation.")
