"""The files of a training run directory that need no transformers to read: its finished checkpoints, the
state a checkpoint keeps only to resume, and the per-step loss log.

Kept apart from the Trainer callbacks that write them (`crossknow.training.callbacks`), so that a pipeline
can read and check its inputs and its run directory before importing transformers and torch.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

CHECKPOINT_DIR = re.compile(r"^checkpoint-(\d+)$")
RESUME_FILES = ("optimizer.pt", "scheduler.pt", "scaler.pt", "rng_state.pth")
"""Files a checkpoint needs only to resume training; kept in the newest checkpoint alone."""


def complete_checkpoints(directory: Path) -> dict[int, Path]:
    """Checkpoints under `directory` whose save finished (trainer_state.json is written last), by step."""
    found = {}
    if directory.is_dir():
        for path in directory.iterdir():
            match = CHECKPOINT_DIR.match(path.name)
            if match and (path / "trainer_state.json").exists():
                found[int(match.group(1))] = path
    return dict(sorted(found.items()))


def drop_resume_state(checkpoint: Path) -> None:
    """Delete what only resuming needs from `checkpoint`: RESUME_FILES and, from a run on several
    processes, each process' rng_state_RANK.pth (and a DeepSpeed global_step folder)."""
    for name in RESUME_FILES:
        (checkpoint / name).unlink(missing_ok=True)
    for rng in checkpoint.glob("rng_state_*.pth"):
        rng.unlink()
    shutil.rmtree(checkpoint / "global_step", ignore_errors=True)


def read_step_log(path: Path, up_to_step: int | None = None) -> list[dict]:
    """The step log, one row per step (the last line wins when a resumed run logged a step again).

    Rows after `up_to_step` are dropped: they belong to a run killed after its last checkpoint.
    """
    rows: dict[int, dict] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a kill
            if up_to_step is None or row["step"] <= up_to_step:
                rows[row["step"]] = row
    return [rows[step] for step in sorted(rows)]
