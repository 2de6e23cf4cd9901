"""`crossknow train`: continual pretraining with transformers' Trainer, checkpointed and resumable.

Run again on a finished run directory (its files: docs/adaxeval.md), it returns the saved summary. Being the
Trainer, it runs data-parallel under torchrun or accelerate with a global batch size, so that N processes take
the optimizer steps of one (docs/distributed.md); only the main process (RANK 0) writes the run directory's files
and the checkpoints' weights.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from crossknow.data.corpus import Document, read_corpus
from crossknow.data.hub_data import data_file
from crossknow.errors import CrossknowError
from crossknow.models.device import resolve_device
from crossknow.models.scoring_check import ensure_scoring_path
from crossknow.models.specs import resolve_local
from crossknow.store.atomic import atomic_write, atomic_write_json, atomic_write_text
from crossknow.store.config_keys import volatile_keys
from crossknow.store.hashing import file_sha256
from crossknow.store.run_dir import RunDir
from crossknow.training.budget import TokenisedText, budgeted_mix
from crossknow.training.collate import SequenceCollator, pad_token_id
from crossknow.training.exclusion import EXCLUDED_FILE, TransferExclusion, transfer_documents
from crossknow.training.layers import select_trainable
from crossknow.training.lora import with_lora
from crossknow.training.packing import check_document_masking, sequences
from crossknow.training.qa_pairs import ask_qa_pairs, qa_client, qa_examples, qa_pool, summarise
from crossknow.training.recipes import build_parts
from crossknow.training.records import (
    Part,
    PartTokens,
    QARecord,
    QASummary,
    TrainConfig,
    TrainingExample,
    TrainSummary,
)
from crossknow.training.run_files import RESUME_FILES, complete_checkpoints, drop_resume_state, read_step_log
from crossknow.training.templates import TemplateTable

TRAIN_LOG_SCHEMA = pa.schema(
    [("step", pa.int64()), ("loss", pa.float64()), ("learning_rate", pa.float64()),
     ("grad_norm", pa.float64()), ("tokens", pa.int64())]
)
"""train_log.parquet: training loss, learning rate, gradient norm and tokens seen after each optimizer step."""

SUMMARY_FILE = "train_summary.json"
QA_FILE = "qa_pairs.jsonl"


def model_source(spec: str) -> tuple[str, str | None]:
    """(path or hub id, revision) of a model spec training can start from: default or hf:PATH_OR_ID[@REVISION]."""
    local = None if spec.startswith("gguf:") else resolve_local(spec)
    if local is None:
        raise CrossknowError(f"--model {spec!r}: training takes default or hf:PATH_OR_ID[@REVISION]")
    return local.path, local.revision


def _is_main_process() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


def _write_lines(path: Path, records: list[Any]) -> None:
    atomic_write_text(path, "".join(r.model_dump_json() + "\n" for r in records))


def _world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def gradient_accumulation(config: TrainConfig, processes: int) -> int:
    """Forward passes per optimizer step on each of `processes` processes that make up the global batch."""
    per_pass = config.micro_batch_size * processes
    if config.batch_size % per_pass:
        raise CrossknowError(
            f"--batch-size {config.batch_size} is not a multiple of --micro-batch-size {config.micro_batch_size} "
            f"x {processes} processes"
        )
    return config.batch_size // per_pass


def hf_training_arguments(config: TrainConfig, out: Path) -> Any:
    """transformers' TrainingArguments of `crossknow train` for `config`, writing into `out` (also used by
    `crossknow pitfalls finetune`)."""
    from transformers import TrainingArguments

    use_cpu = resolve_device(config.device) == "cpu"  # a missing CUDA device is an error, not a run on the CPU
    return TrainingArguments(
        output_dir=str(out / "checkpoints"),
        per_device_train_batch_size=config.micro_batch_size,
        gradient_accumulation_steps=gradient_accumulation(config, _world_size()),
        num_train_epochs=config.epochs,
        max_steps=config.max_steps or -1,
        learning_rate=config.learning_rate,
        lr_scheduler_type="cosine_with_min_lr",
        lr_scheduler_kwargs={"min_lr": config.min_learning_rate},
        warmup_steps=config.warmup_ratio,  # a float below 1 is a fraction of all steps
        weight_decay=config.weight_decay,
        max_grad_norm=config.max_grad_norm,
        seed=config.seed,
        data_seed=config.seed,
        bf16=config.dtype == "bfloat16",
        use_cpu=use_cpu,
        logging_steps=1,
        save_strategy="steps",
        save_steps=config.save_every_steps or 10**9,  # the final step is always saved
        include_num_input_tokens_seen="non_padding",
        report_to=config.report_to or "none",
        activation_checkpointing=config.gradient_checkpointing,
        # Non-reentrant: the reentrant kind computes no gradient inside a block whose inputs need none, as with
        # frozen embeddings (--train-layers blocks or last:N).
        activation_checkpointing_kwargs={"use_reentrant": False} if config.gradient_checkpointing else None,
        disable_tqdm=True,
        remove_unused_columns=False,
        dataloader_pin_memory=not use_cpu,
    )


def resume_point(checkpoints: dict[int, Path]) -> Path | None:
    """The newest of `checkpoints` (step -> directory) that holds an optimizer state to resume from, or None."""
    resumable = [path for path in checkpoints.values() if all((path / f).exists() for f in RESUME_FILES[:2])]
    return resumable[-1] if resumable else None


def _question_answer_pairs(
    config: TrainConfig, knowledge: list[Any], args: Any, out: Path
) -> tuple[list[QARecord], QASummary | None]:
    """The instruction recipe's question-answer pairs of the C_K documents in `config.langs`, in corpus order.

    Under several processes the main one asks first and the others then find its answers in the cache. A
    local generator's weights are freed on return, before the model to train is loaded."""
    if not config.asks_qa_pairs:
        return [], None
    docs = [doc for doc in knowledge if doc.lang in config.langs]
    with args.main_process_first(desc="question-answer pairs"):
        pool = qa_pool(config, out)
        try:
            client = qa_client(config, pool)
            records = ask_qa_pairs(client, docs, config.qa_pairs)
        finally:
            pool.close()
    return records, summarise(records, config.qa_pairs, client)


@dataclass(frozen=True)
class _Inputs:
    """What a run reads before anything else: C_K's documents, the recipe's parts, what --exclude-eval left out of
    C_T (None without it) and the SHA-256 of every input file."""

    knowledge: list[Document]
    parts: dict[Part, list[TrainingExample]]
    exclusion: TransferExclusion | None
    hashes: dict[str, str]


@dataclass(frozen=True)
class _Mix:
    """What the model trains on: the mix's texts, each part's counts and the sequences made of the texts."""

    texts: list[TokenisedText]
    part_tokens: dict[str, PartTokens]
    rows: list[dict[str, list[int]]]


def run_train(
    config: TrainConfig, out: Path, on_progress: Callable[[int, int], None] | None = None
) -> TrainSummary:
    """Train `config.model` on the mixed corpus into run directory `out`; resume from its newest checkpoint.

    `on_progress(step, total_steps)` is called after each optimizer step. The corpora and the recipe are read
    and checked first, then the scoring path its checkpoints will be traced with (a broken one fails now, not
    after the training), and only then are torch and the model loaded.
    """
    started = time.monotonic()
    inputs = _read_inputs(config)
    ensure_scoring_path()
    import torch
    from transformers.trainer_callback import PrinterCallback

    from crossknow.models.hf_loading import load_causal_lm
    from crossknow.training.labelled_loss import LabelledLossTrainer

    out = Path(out)
    checkpoints = complete_checkpoints(out / "checkpoints")
    finished = _open_run_dir(config, out, inputs, has_results=bool(checkpoints))
    if finished is not None:
        return finished

    args = hf_training_arguments(config, out)
    qa, qa_summary = _question_answer_pairs(config, inputs.knowledge, args, out)
    inputs.parts["knowledge"] += qa_examples(qa)
    loading = time.monotonic()
    path, revision = model_source(config.model)
    torch.manual_seed(config.seed)
    # float32 master weights, on the CPU until the Trainer places them (and switches to train mode)
    tokenizer, model = load_causal_lm(path, revision, config.model, "cpu", "float32")
    load_seconds = time.monotonic() - loading
    mix = _mix(config, out, inputs.parts, tokenizer, qa)
    collate = SequenceCollator(pad_token_id(tokenizer))
    if config.packing == "masked":
        check_document_masking(model, tokenizer, collate)
    if config.lora_rank is None:
        trainable, total = select_trainable(model, config.train_layers)
    else:
        model, trainable, total = with_lora(model, config.lora_rank, config.lora_alpha, config.lora_targets)

    trainer = LabelledLossTrainer(
        model=model, args=args, train_dataset=mix.rows, data_collator=collate, processing_class=tokenizer,
        callbacks=_callbacks(config, out, on_progress),
    )
    trainer.remove_callback(PrinterCallback)  # the step log and the progress bar report instead
    _train(trainer, checkpoints)

    saved = complete_checkpoints(out / "checkpoints")
    summary = TrainSummary(
        steps=trainer.state.global_step,
        tokens_seen=int(trainer.state.num_input_tokens_seen),
        examples=_kinds(mix.texts),
        parts=mix.part_tokens,
        sequences=len(mix.rows),
        qa=qa_summary,
        transfer_excluded=len(inputs.exclusion.excluded) if inputs.exclusion is not None else None,
        trainable_parameters=trainable,
        total_parameters=total,
        checkpoints=sorted(saved),
        seconds=round(time.monotonic() - started, 3),
        load_seconds=round(load_seconds, 3),
    )
    _write_results(out, summary, saved)
    return summary


def _read_inputs(config: TrainConfig) -> _Inputs:
    """Read the corpora and build the recipe's parts: a recipe error, or a batch the processes cannot share, stops
    the run here, before anything is written."""
    files = [data_file(path) for path in (config.corpus, config.transfer_corpus, *(config.exclude_eval or [])) if path]
    knowledge = read_corpus(files[0])
    transfer: list[Any] = []
    exclusion: TransferExclusion | None = None
    if config.transfer_corpus:
        transfer, exclusion = transfer_documents(config, knowledge, read_corpus(files[1]))
    parts = build_parts(config, knowledge, transfer, TemplateTable.load())  # a recipe error stops it here
    hashes = {str(path): file_sha256(path) for path in files}
    gradient_accumulation(config, _world_size())  # a batch the processes cannot share fails before anything runs
    return _Inputs(knowledge, parts, exclusion, hashes)


def _open_run_dir(config: TrainConfig, out: Path, inputs: _Inputs, has_results: bool) -> TrainSummary | None:
    """Check the run directory against `config` and record it (the main process); the saved summary of a finished
    run, else None."""
    if _is_main_process():
        with RunDir(out) as run:  # checked and recorded; the Trainer's own files are its resume state
            run.open(config.model_dump(), inputs.hashes, volatile=volatile_keys(type(config)), has_results=has_results,
                     upgrade=type(config).recorded)
            if inputs.exclusion is not None:
                atomic_write_json(out / EXCLUDED_FILE, inputs.exclusion.model_dump())
    if (out / SUMMARY_FILE).exists():
        return TrainSummary.model_validate_json((out / SUMMARY_FILE).read_text(encoding="utf-8"))
    return None


def _mix(
    config: TrainConfig, out: Path, parts: dict[Part, list[TrainingExample]], tokenizer: Any,
    qa: list[QARecord],
) -> _Mix:
    """The parts tokenised into the budgeted mix and made into sequences; the main process writes train_data.jsonl
    and, when the recipe asks for them, the question-answer pairs `qa` to qa_pairs.jsonl."""
    texts, part_tokens = budgeted_mix(config, parts, tokenizer)
    rows = sequences([text.ids for text in texts], config.max_length, config.packing)
    if _is_main_process():
        if config.asks_qa_pairs:
            _write_lines(out / QA_FILE, qa)
        _write_lines(out / "train_data.jsonl", [text.trained() for text in texts])
    return _Mix(texts, part_tokens, rows)


def _callbacks(config: TrainConfig, out: Path, on_progress: Callable[[int, int], None] | None) -> list[Any]:
    """The Trainer's callbacks: the step log, the pruning of old resume state and, with --save-every-tokens, the
    token-interval saves."""
    from crossknow.training.callbacks import PruneResumeState, StepLog, TokenIntervalSave

    callbacks: list[Any] = [StepLog(out / "train_log.jsonl", on_progress), PruneResumeState()]
    if config.save_every_tokens:
        callbacks.append(TokenIntervalSave(config.save_every_tokens))
    return callbacks


def _train(trainer: Any, checkpoints: dict[int, Path]) -> None:
    """Train, from the newest of `checkpoints` that can be resumed from, until every process is done."""
    resume = resume_point(checkpoints)
    trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    # Under torchrun every process writes its own rng_state_RANK.pth into the final checkpoint, with no
    # barrier after it: wait for all of them before the main process cleans that checkpoint up.
    trainer.accelerator.wait_for_everyone()


def _write_results(out: Path, summary: TrainSummary, saved: dict[int, Path]) -> None:
    """The main process writes train_log.parquet and train_summary.json and, the run being finished, drops the
    final checkpoint's resume state."""
    if not _is_main_process():
        return
    final_step = summary.steps
    log = pa.Table.from_pylist(read_step_log(out / "train_log.jsonl", final_step), schema=TRAIN_LOG_SCHEMA)
    atomic_write(out / "train_log.parquet", lambda handle: pq.write_table(log, handle), binary=True)
    atomic_write_json(out / SUMMARY_FILE, json.loads(summary.model_dump_json()))
    if final_step in saved:  # the run is finished: nothing will resume from it
        drop_resume_state(saved[final_step])


def _kinds(texts: list[TokenisedText]) -> dict[str, int]:
    """Texts trained on per 'part/kind', sorted."""
    return dict(sorted(Counter(f"{t.example.part}/{t.example.kind}" for t in texts).items()))
