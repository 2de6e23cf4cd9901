"""The training stage of `crossknow pitfalls finetune`: SFT through `crossknow train`'s machinery, or DPO with trl.

Both use `crossknow train`'s training arguments, step log, checkpoint pruning and resume rule, with a validation
loss every `eval_every_steps` and at the last step. SFT's loss is on the target and EOS only
(`PromptTargetCollator`); DPO is `trl.DPOTrainer` against a frozen copy of the base model. The stage is finished
when train/finetune_summary.json exists (written last).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from crossknow.models.boundary import encode_pair
from crossknow.pitfalls.finetune.examples import PreferenceExample, SFTExample
from crossknow.pitfalls.finetune.records import FinetuneSummary, PitfallsFinetuneConfig
from crossknow.store.atomic import atomic_write_json
from crossknow.training.callbacks import PruneResumeState, StepLog
from crossknow.training.collate import IGNORED_LABEL, SequenceCollator, pad_token_id
from crossknow.training.records import TrainConfig
from crossknow.training.run_files import complete_checkpoints, drop_resume_state
from crossknow.training.trainer import hf_training_arguments, model_source, resume_point

SUMMARY_FILE = "finetune_summary.json"
VALIDATION_LOG = "validation_log.jsonl"


@dataclass(frozen=True)
class PromptTargetCollator(SequenceCollator):
    """`SequenceCollator`'s batches, with the labels of each row's first `prompt_length` tokens ignored."""

    def __call__(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """input_ids, position_ids, labels (IGNORED_LABEL on padding and the prompt) and use_cache=False."""
        batch = super().__call__(rows)
        for index, row in enumerate(rows):
            batch["labels"][index, : row["prompt_length"]] = IGNORED_LABEL
        return batch


class ValidationLog(TrainerCallback):
    """Append each evaluation's metrics (step, eval_loss, ...) as one JSON line to `path`."""

    def __init__(self, path: Path):
        self.path = path

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        if state.is_world_process_zero and metrics:
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps({"step": state.global_step, **metrics}) + "\n")


def sft_row(tokenizer: Any, example: SFTExample) -> dict[str, Any]:
    """The training row of one example: the prompt's and the target's tokens, then EOS; `prompt_length`
    tokens are out of the loss."""
    prompt, target = encode_pair(lambda text: tokenizer(text).input_ids, example.prompt, example.target)
    ids = prompt + target + [tokenizer.eos_token_id]
    return {"input_ids": ids, "position_ids": list(range(len(ids))), "prompt_length": len(prompt)}


def training_arguments(config: PitfallsFinetuneConfig, out: Path, validation: bool) -> Any:
    """`crossknow train`'s TrainingArguments for these settings (a cosine schedule that decays to 0), with the
    validation set evaluated every `eval_every_steps` at a per-device batch of 1 (the paper's)."""
    train_config = TrainConfig(
        model=config.model, corpus=config.train_pairs, epochs=config.epochs, max_steps=config.max_steps,
        learning_rate=config.learning_rate, min_learning_rate=0.0, warmup_ratio=config.warmup_ratio,
        weight_decay=config.weight_decay, batch_size=config.batch_size, micro_batch_size=config.micro_batch_size,
        save_every_steps=config.save_every_steps, train_layers=config.train_layers, seed=config.seed,
        device=config.device, dtype=config.dtype, gradient_checkpointing=config.gradient_checkpointing,
        report_to=config.report_to)
    args = hf_training_arguments(train_config, out)
    if not validation:
        return args
    return dataclasses.replace(args, eval_strategy="steps", eval_steps=config.eval_every_steps,
                               per_device_eval_batch_size=1)


def _dpo_arguments(config: PitfallsFinetuneConfig, args: Any) -> Any:
    from trl import DPOConfig

    values = {field.name: getattr(args, field.name) for field in dataclasses.fields(type(args)) if field.init}
    # No truncation (the pairs' questions are short); the tokens-seen count needs an input_ids column.
    values |= {"beta": config.beta, "max_length": None, "include_num_input_tokens_seen": "no"}
    return DPOConfig(**values)


def _sft_trainer(tokenizer: Any, model: Any, args: Any, train: Sequence[SFTExample],
                 validation: Sequence[SFTExample], callbacks: list[Any]) -> Any:
    from crossknow.training.labelled_loss import LabelledLossTrainer

    return LabelledLossTrainer(model=model, args=args, train_dataset=[sft_row(tokenizer, e) for e in train],
                   eval_dataset=[sft_row(tokenizer, e) for e in validation] or None,
                   data_collator=PromptTargetCollator(pad_token_id(tokenizer)), processing_class=tokenizer,
                   callbacks=callbacks)


def _dpo_trainer(config: PitfallsFinetuneConfig, tokenizer: Any, model: Any, args: Any,
                 train: Sequence[PreferenceExample], validation: Sequence[PreferenceExample],
                 callbacks: list[Any]) -> Any:
    from datasets import Dataset
    from datasets.utils.logging import disable_progress_bar
    from trl import DPOTrainer

    disable_progress_bar()
    reference = copy.deepcopy(model).requires_grad_(False).eval()

    def dataset(examples: Sequence[PreferenceExample]) -> Any:
        return Dataset.from_list([{"prompt": e.prompt, "chosen": e.chosen, "rejected": e.rejected} for e in examples])

    return DPOTrainer(model=model, ref_model=reference, args=_dpo_arguments(config, args),
                      train_dataset=dataset(train), eval_dataset=dataset(validation) if validation else None,
                      processing_class=tokenizer, callbacks=callbacks)


def _final_validation_loss(trainer: Any, step: int) -> float:
    """The validation loss at `step`: the Trainer's own evaluation there (it evaluates at the last step),
    else a new one."""
    at_step = [entry["eval_loss"] for entry in trainer.state.log_history
               if "eval_loss" in entry and entry.get("step") == step]
    return at_step[-1] if at_step else trainer.evaluate()["eval_loss"]


def read_summary(out: Path) -> FinetuneSummary | None:
    """The finished stage's summary in `out` (the run's train/ directory), or None while unfinished."""
    path = out / SUMMARY_FILE
    return FinetuneSummary.model_validate_json(path.read_text(encoding="utf-8")) if path.exists() else None


def run_training(config: PitfallsFinetuneConfig, examples: Sequence[SFTExample | PreferenceExample], out: Path,
                 run_root: Path, on_step: Callable[[int, int], None] | None = None) -> FinetuneSummary:
    """Fine-tune `config.model` on the 'train' examples into `out` (see the module docstring); return the
    summary, whose checkpoint path is relative to `run_root`. `on_step(step, total)` after each step."""
    finished = read_summary(out)
    if finished is not None:
        return finished
    started = time.monotonic()
    import torch
    from transformers.trainer_callback import PrinterCallback

    from crossknow.models.hf_loading import load_causal_lm
    from crossknow.training.layers import select_trainable
    from crossknow.training.lora import with_lora

    train = [e for e in examples if e.split == "train"]
    validation = [e for e in examples if e.split == "validation"]
    args = training_arguments(config, out, bool(validation))
    path, revision = model_source(config.model)
    torch.manual_seed(config.seed)
    tokenizer, model = load_causal_lm(path, revision, config.model, "cpu", "float32")  # placed by the Trainer
    if config.lora_rank is not None:  # wrapped before the trainers take the model (DPO's reference copies it)
        model, trainable, total = with_lora(model, config.lora_rank, config.lora_alpha, config.lora_targets)
    callbacks = [StepLog(out / "train_log.jsonl", on_step), PruneResumeState(), ValidationLog(out / VALIDATION_LOG)]
    if config.method == "sft":
        trainer = _sft_trainer(tokenizer, model, args, train, validation, callbacks)  # type: ignore[arg-type]
    else:
        trainer = _dpo_trainer(config, tokenizer, model, args, train, validation, callbacks)  # type: ignore[arg-type]
    if config.lora_rank is None:
        trainable, total = select_trainable(model, config.train_layers)
    trainer.remove_callback(PrinterCallback)
    resume = resume_point(complete_checkpoints(out / "checkpoints"))
    trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    step = trainer.state.global_step
    validation_loss = _final_validation_loss(trainer, step) if validation else None
    checkpoint = complete_checkpoints(out / "checkpoints")[step]
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    summary = FinetuneSummary(
        method=config.method, train_examples=len(train), validation_examples=len(validation), steps=step,
        train_loss=losses[-1] if losses else None, validation_loss=validation_loss,
        checkpoint=str(checkpoint.relative_to(run_root)), trainable_parameters=trainable, total_parameters=total,
        seconds=round(time.monotonic() - started, 3))
    atomic_write_json(out / SUMMARY_FILE, summary.model_dump())
    drop_resume_state(checkpoint)  # after the summary: a kill in between must not lose the resume point
    return summary
