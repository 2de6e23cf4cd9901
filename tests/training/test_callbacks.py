"""Trainer callbacks and the step log, driven with constructed TrainerState / TrainerControl objects."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("transformers")

from transformers import TrainerControl, TrainerState  # noqa: E402

from crossknow.training.callbacks import (  # noqa: E402
    RESUME_FILES,
    PruneResumeState,
    StepLog,
    TokenIntervalSave,
    complete_checkpoints,
    read_step_log,
)


def write_log(path: Path, lines: list[str], end: str = "\n") -> Path:
    """A step log with these raw lines (the last one followed by `end`)."""
    path.write_text("\n".join(lines) + end, encoding="utf-8")
    return path


def row(step: int, loss: float) -> str:
    """One step-log line."""
    return json.dumps({"step": step, "loss": loss, "learning_rate": 1e-5, "grad_norm": 1.0, "tokens": 10 * step})


def test_read_step_log_keeps_the_last_line_of_a_repeated_step(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl", [row(1, 3.0), row(2, 2.5), row(3, 2.4), row(2, 2.2), row(3, 2.1)])
    rows = read_step_log(log)
    assert [(r["step"], r["loss"]) for r in rows] == [(1, 3.0), (2, 2.2), (3, 2.1)]


def test_read_step_log_drops_a_truncated_last_line(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl", [row(1, 3.0), row(2, 2.5), row(3, 2.4)[:25]], end="")
    assert [r["step"] for r in read_step_log(log)] == [1, 2]


def test_read_step_log_drops_steps_after_the_last_checkpoint(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl", [row(step, 1.0 / step) for step in range(1, 7)])
    assert [r["step"] for r in read_step_log(log, up_to_step=4)] == [1, 2, 3, 4]
    assert [r["step"] for r in read_step_log(log, up_to_step=0)] == []
    assert read_step_log(tmp_path / "missing.jsonl") == []


def log_step(callback: StepLog, step: int, loss: float, tokens: int) -> None:
    """Have `callback` log one optimizer step as the Trainer does."""
    state = TrainerState(global_step=step, num_input_tokens_seen=tokens)
    callback.on_log(None, state, TrainerControl(), logs={"loss": loss, "learning_rate": 2e-5, "grad_norm": 0.5})


def test_step_log_writes_one_line_per_logged_step(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    callback = StepLog(tmp_path / "log.jsonl", on_step=lambda step, total: seen.append((step, total)))
    callback.on_train_begin(None, TrainerState(), TrainerControl())
    log_step(callback, 1, 2.0, 96)
    callback.on_log(None, TrainerState(global_step=1), TrainerControl(), logs={"train_runtime": 3.0})  # no loss
    callback.on_step_end(None, TrainerState(global_step=1, max_steps=4), TrainerControl())
    log_step(callback, 2, 1.5, 192)
    rows = read_step_log(tmp_path / "log.jsonl")
    assert rows == [
        {"step": 1, "loss": 2.0, "learning_rate": 2e-5, "grad_norm": 0.5, "tokens": 96},
        {"step": 2, "loss": 1.5, "learning_rate": 2e-5, "grad_norm": 0.5, "tokens": 192},
    ]
    assert seen == [(1, 4)]


def test_a_resumed_step_log_is_not_glued_to_a_line_cut_by_a_kill(tmp_path: Path) -> None:
    # The killed run wrote steps 1-2 and half of step 3; the resumed run starts again after step 2.
    log = write_log(tmp_path / "log.jsonl", [row(1, 3.0), row(2, 2.5), row(3, 2.4)[:30]], end="")
    callback = StepLog(log)
    callback.on_train_begin(None, TrainerState(global_step=2), TrainerControl())
    log_step(callback, 3, 2.3, 30)
    log_step(callback, 4, 2.2, 40)
    assert [(r["step"], r["loss"]) for r in read_step_log(log)] == [(1, 3.0), (2, 2.5), (3, 2.3), (4, 2.2)]


def crossings(every: int, tokens: list[int], start: int = 0) -> list[int]:
    """Drive TokenIntervalSave over steps with these cumulative token counts; the steps that asked for a save."""
    callback = TokenIntervalSave(every)
    state = TrainerState(num_input_tokens_seen=start)
    callback.on_train_begin(None, state, TrainerControl())
    saved = []
    for step, seen in enumerate(tokens, start=1):
        state.global_step, state.num_input_tokens_seen = step, seen
        control = TrainerControl()  # the Trainer resets should_save after each save
        callback.on_step_end(None, state, control)
        if control.should_save:
            saved.append(step)
    return saved


def expected_crossings(every: int, tokens: list[int], start: int = 0) -> list[int]:
    """Steps at which the token count reaches a multiple of `every` it had not reached before."""
    reached, steps = start // every, []
    for step, seen in enumerate(tokens, start=1):
        if seen // every > reached:
            steps.append(step)
        reached = max(reached, seen // every)
    return steps


@pytest.mark.parametrize(
    ("every", "tokens"),
    [
        (100, [40, 90, 100, 150, 199, 260, 420, 430]),  # reaching 100 exactly; jumping over 300 and 400 at once
        (96, [96 * n for n in range(1, 7)]),  # every step lands on a multiple
        (1000, [90, 180, 270]),  # never
        (7, [3, 6, 9, 12, 15, 18, 21, 24]),
    ],
)
def test_token_interval_save_fires_exactly_when_a_multiple_is_crossed(every: int, tokens: list[int]) -> None:
    assert crossings(every, tokens) == expected_crossings(every, tokens)


def test_token_interval_save_after_resume_counts_from_the_restored_tokens() -> None:
    # Resumed at 250 tokens: 300 is the next multiple of 100; 200 was passed before the kill.
    assert crossings(100, [290, 310, 350, 401], start=250) == [2, 4]
    assert crossings(100, [290, 310, 350, 401], start=250) == expected_crossings(100, [290, 310, 350, 401], start=250)


def make_checkpoint(directory: Path, step: int, complete: bool = True) -> Path:
    """A Trainer checkpoint directory with model, resume files and (when complete) trainer_state.json."""
    path = directory / f"checkpoint-{step}"
    path.mkdir(parents=True)
    for name in ("config.json", "model.safetensors", "training_args.bin", *RESUME_FILES):
        (path / name).write_bytes(b"x")
    if complete:
        (path / "trainer_state.json").write_text("{}", encoding="utf-8")
    return path


def test_complete_checkpoints_skips_unfinished_saves_and_sorts_by_step(tmp_path: Path) -> None:
    for step in (10, 2, 9):
        make_checkpoint(tmp_path, step)
    make_checkpoint(tmp_path, 12, complete=False)
    (tmp_path / "checkpoint-x").mkdir()
    (tmp_path / "tmp-checkpoint-11").mkdir()
    found = complete_checkpoints(tmp_path)
    assert list(found) == [2, 9, 10]
    assert found[10] == tmp_path / "checkpoint-10"
    assert complete_checkpoints(tmp_path / "absent") == {}


def test_prune_keeps_resume_files_only_in_the_newest_checkpoint(tmp_path: Path) -> None:
    for step in (1, 2, 3):
        make_checkpoint(tmp_path, step)
    (tmp_path / "checkpoint-1" / "rng_state_1.pth").write_bytes(b"x")
    unfinished = make_checkpoint(tmp_path, 4, complete=False)
    PruneResumeState().on_save(SimpleNamespace(output_dir=str(tmp_path)), TrainerState(global_step=3),
                               TrainerControl())
    for step in (1, 2):
        left = {p.name for p in (tmp_path / f"checkpoint-{step}").iterdir()}
        assert left == {"config.json", "model.safetensors", "training_args.bin", "trainer_state.json"}, step
    assert all((tmp_path / "checkpoint-3" / name).exists() for name in RESUME_FILES)
    assert all((unfinished / name).exists() for name in RESUME_FILES)  # not a complete checkpoint: untouched


def test_prune_does_nothing_outside_the_main_process(tmp_path: Path) -> None:
    make_checkpoint(tmp_path, 1)
    make_checkpoint(tmp_path, 2)
    state = TrainerState(global_step=2, is_world_process_zero=False)
    PruneResumeState().on_save(SimpleNamespace(output_dir=str(tmp_path)), state, TrainerControl())
    assert all((tmp_path / "checkpoint-1" / name).exists() for name in RESUME_FILES)


def test_step_log_values_are_plain_floats(tmp_path: Path) -> None:
    callback = StepLog(tmp_path / "log.jsonl")
    state = TrainerState(global_step=1, num_input_tokens_seen=5)
    callback.on_log(None, state, TrainerControl(), logs={"loss": 1.25, "grad_norm": None})
    (entry,) = read_step_log(tmp_path / "log.jsonl")
    assert entry["grad_norm"] is None and entry["learning_rate"] == 0.0 and math.isfinite(entry["loss"])
