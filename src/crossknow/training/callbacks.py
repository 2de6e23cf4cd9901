"""Trainer callbacks: token-interval checkpoints, the per-step loss log, and pruning old optimizer states.

The files they write are read by `crossknow.training.run_files`, which needs no transformers (its names are
exported here too, beside the callbacks that write them).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from transformers import TrainerCallback

from crossknow.training.run_files import RESUME_FILES, complete_checkpoints, drop_resume_state, read_step_log

__all__ = ["RESUME_FILES", "PruneResumeState", "StepLog", "TokenIntervalSave", "complete_checkpoints",
           "drop_resume_state", "read_step_log"]


class TokenIntervalSave(TrainerCallback):
    """Ask for a checkpoint each time `every` more non-padding tokens have been seen."""

    def __init__(self, every: int):
        self.every = every
        self.last = 0

    def on_train_begin(self, args, state, control, **kwargs):
        self.last = state.num_input_tokens_seen

    def on_step_end(self, args, state, control, **kwargs):
        if state.num_input_tokens_seen // self.every > self.last // self.every:
            control.should_save = True
        self.last = state.num_input_tokens_seen


class PruneResumeState(TrainerCallback):
    """After each save, drop the optimizer and scheduler states of every checkpoint but the newest.

    Older checkpoints keep the model (what `crossknow trace` reads); only the newest can resume training.
    """

    def on_save(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        checkpoints = complete_checkpoints(Path(args.output_dir))
        for step, path in checkpoints.items():
            if step != state.global_step:
                drop_resume_state(path)


class StepLog(TrainerCallback):
    """Append one JSON line per optimizer step (step, loss, learning_rate, grad_norm, tokens) to `path`."""

    def __init__(self, path: Path, on_step: Callable[[int, int], None] | None = None):
        self.path = path
        self.on_step = on_step

    def on_train_begin(self, args, state, control, **kwargs):
        # A run killed mid-write leaves a last line without its newline: end it, or the first line
        # this (resumed) run appends would be glued to it and dropped by read_step_log.
        if state.is_world_process_zero and self.path.exists() and self.path.stat().st_size:
            with self.path.open("rb+") as handle:
                handle.seek(-1, 2)
                if handle.read(1) != b"\n":
                    handle.write(b"\n")

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs or "loss" not in logs:
            return
        row = {
            "step": state.global_step,
            "loss": float(logs["loss"]),
            "learning_rate": float(logs.get("learning_rate", 0.0)),
            "grad_norm": float(logs["grad_norm"]) if logs.get("grad_norm") is not None else None,
            "tokens": int(state.num_input_tokens_seen),
        }
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")

    def on_step_end(self, args, state, control, **kwargs):
        if self.on_step and state.is_world_process_zero:
            self.on_step(state.global_step, state.max_steps)
