"""`crossknow train` data-parallel under torchrun: 2 CPU processes (gloo) with the global batch of 2 (one sequence
per process per step) take the same steps as one process with the same global batch, and the run directory is
written once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from crossknow.training.callbacks import RESUME_FILES, complete_checkpoints, drop_resume_state
from crossknow.training.frozen_shard import FROZEN_FILE, INDEX_FILE, TRAINED_FILE
from crossknow.training.records import TrainSummary
from crossknow.training.trainer import SUMMARY_FILE, run_train

from ..gpu.tiny_hf_model import write_tiny_model
from .tiny_run import TINY_SETTINGS, checkpoint_tensors, tiny_config, write_tiny_corpus

pytest.importorskip("transformers")
safetensors_torch = pytest.importorskip("safetensors.torch")
torch = pytest.importorskip("torch")

PROCESSES = 2
"""Processes torchrun starts (the CI machine has 2 cores; torchrun gives each one thread)."""

SETTINGS: dict[str, Any] = {**TINY_SETTINGS, "packing": "masked", "max_length": 140, "learning_rate": 2e-5}
"""The tiny run (tests/training/tiny_run.py) on the tiny random Gemma 3 of tests/gpu/tiny_hf_model.py (same
architecture, a 1,024-word tokenizer: the test checks data parallelism, not the embedded model's weights), with three
changes. Packing masked (the default) and max_length 140: the six documents (794 tokens with BOS and EOS) pack into
five sequences of 140 and one of 94, so a step can hold sequences of different lengths, padded, and texts cut across
two sequences. learning_rate 2e-5 (the paper's): larger rates amplify rounding differences step by step. 4 steps
of 2 sequences over 6 sequences cross an epoch boundary (the second epoch's shuffle is checked too). The sequences
of an epoch must be a multiple of the global batch: at max_length 120 (seven sequences) the epoch's last step
held one sequence in one process and two under torchrun, whose sampler repeats one to even out the ranks."""

CHECKPOINT_FILES = {
    "config.json", "generation_config.json", FROZEN_FILE, TRAINED_FILE, INDEX_FILE, "tokenizer.json",
    "tokenizer_config.json", "trainer_state.json", "training_args.bin",
}
"""A finished run's checkpoint: the model, its tokenizer and the trainer state; no resume state of any rank."""

LOSS_RTOL = 1e-5
"""Per-step loss and gradient norm, relative. Both runs compute the same float32 sums over the same tokens in
another order (one batch of 2 against two batches of 1 whose gradients gloo adds): measured here at most
1.1e-7 relative on losses and 9.7e-8 on gradient norms. The four steps' losses differ from each other by at
least 2.4e-4 relative: a step on other examples, or with other padding, fails by more than an order of magnitude."""

WEIGHT_ATOL = SETTINGS["learning_rate"] / 2
"""Trained weights, absolute. AdamW divides each gradient entry by its own running magnitude, so an entry
whose gradient is at the rounding level can move by up to about one learning rate (2e-5) differently:
measured at most 1.5e-8 after 2 and after 4 steps, while the weights move by up to 5.6e-5. Processes that
did not average their gradients, or trained on other examples, move entries up to 2 learning rates apart."""


def _cli_args(corpus: Path, out: Path, settings: dict[str, Any]) -> list[str]:
    """`crossknow train` arguments for `settings` on the English documents of `corpus`."""
    args = ["train", "--corpus", str(corpus), "--out", str(out), "--langs", "en"]
    for name, value in settings.items():
        args += [f"--{name.replace('_', '-')}", str(value)]
    return args


def _weights(run: Path, step: int) -> dict[str, Any]:
    """The tensors of `run`'s checkpoint at `step`."""
    return checkpoint_tensors(run / "checkpoints" / f"checkpoint-{step}")


def test_a_finished_checkpoint_keeps_no_resume_state_of_any_rank(tmp_path: Path) -> None:
    """Under torchrun each process writes rng_state_RANK.pth; the trainer used to remove only rng_state.pth
    (one process's name) from the final checkpoint and left rng_state_0.pth and rng_state_1.pth there."""
    kept = {"model.safetensors", "trainer_state.json"}
    for name in (*kept, *RESUME_FILES, "rng_state_0.pth", "rng_state_1.pth", "global_step/shard.pt"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    drop_resume_state(tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == kept


@pytest.mark.slow
def test_torchrun_on_2_processes_trains_as_one_process_with_the_global_batch(tmp_path: Path) -> None:
    model = write_tiny_model(tmp_path / "model")
    corpus = write_tiny_corpus(tmp_path / "corpus.jsonl")
    reference = run_train(tiny_config(corpus, model=f"hf:{model}", **SETTINGS), tmp_path / "one")

    out = tmp_path / "two"
    per_device = {**SETTINGS, "micro_batch_size": SETTINGS["batch_size"] // PROCESSES}  # the same global batch
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(PROCESSES),
               "-m", "crossknow", *_cli_args(corpus, out, per_device), "--model", f"hf:{model}"]
    # gloo on the CPU; --standalone picks a free port, so parallel test runs do not collide.
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    # The same steps: every global batch held the same examples, and gloo averaged the gradients.
    rows = pq.read_table(out / "train_log.parquet").to_pylist()
    expected = pq.read_table(tmp_path / "one" / "train_log.parquet").to_pylist()
    assert [r["step"] for r in rows] == [r["step"] for r in expected] == [1, 2, 3, 4]
    for row, ref in zip(rows, expected, strict=True):
        # Non-padding tokens of the whole step, gathered from both processes (each saw 1 sequence).
        assert row["tokens"] == ref["tokens"], (row, ref)
        assert row["loss"] == pytest.approx(ref["loss"], rel=LOSS_RTOL), (row, ref)
        assert row["grad_norm"] == pytest.approx(ref["grad_norm"], rel=LOSS_RTOL), (row, ref)
        assert row["learning_rate"] == pytest.approx(ref["learning_rate"], rel=1e-9), (row, ref)
    assert len({round(r["loss"], 3) for r in expected}) == 4, "the steps' losses must tell the batches apart"

    base = safetensors_torch.load_file(str(model / "model.safetensors"))
    for step in (2, 4):
        weights, reference_weights = _weights(out, step), _weights(tmp_path / "one", step)
        assert weights.keys() == reference_weights.keys() == base.keys()
        for name, tensor in weights.items():
            if torch.equal(reference_weights[name], base[name]):  # frozen: bit-identical in both runs
                assert torch.equal(tensor, base[name]), (step, name)
            else:
                assert torch.allclose(tensor, reference_weights[name], rtol=0, atol=WEIGHT_ATOL), (step, name)

    # Written once, by rank 0: one log line per step, one copy of the training texts, no resume state.
    log_lines = (out / "train_log.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["step"] for line in log_lines] == [1, 2, 3, 4]
    assert len((out / "train_data.jsonl").read_text(encoding="utf-8").splitlines()) == 6
    assert list(complete_checkpoints(out / "checkpoints")) == [2, 4]
    for step in (2, 4):
        names = {p.name for p in (out / "checkpoints" / f"checkpoint-{step}").iterdir()}
        assert names == CHECKPOINT_FILES, (step, names)
    assert {p.name for p in out.iterdir() if not p.name.startswith(".")} == {  # .lock: the run lock
        "config.yaml", "inputs.json", "environment.json", "train_data.jsonl", "checkpoints", "train_log.jsonl",
        "train_log.parquet", SUMMARY_FILE,
    }
    summary = TrainSummary.model_validate_json((out / SUMMARY_FILE).read_text(encoding="utf-8"))
    timings = {"seconds", "load_seconds"}
    assert summary.model_dump(exclude=timings) == reference.model_dump(exclude=timings)
