"""`crossknow train` under `accelerate launch` with the shipped FSDP config (samples/accelerate/fsdp-8gpu.yaml, its
process count set to the GPUs present, at most 2) against one process on one GPU with the same global batch: the
same steps, and checkpoints saved whole, which `crossknow trace` reads as plain checkpoints. Skipped without CUDA;
FSDP needs CUDA through accelerate, which runs CPU processes as plain data parallelism only."""

from __future__ import annotations

import subprocess
import sys
from importlib import resources
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch

from tests.gpu.tiny_hf_model import write_tiny_model
from tests.training.tiny_run import write_items, write_tiny_corpus

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

CONFIG = Path(str(resources.files("crossknow") / "samples" / "accelerate" / "fsdp-8gpu.yaml"))
SETTINGS = ["--langs", "en", "--packing", "masked", "--max-length", "140", "--learning-rate", "2e-5", "--max-steps",
            "4", "--save-every-steps", "2", "--batch-size", "2", "--device", "cuda"]
"""The data-parallel test's run (tests/training/test_distributed.py), every block trained, in float32."""


def _run(command: list[str], cwd: Path) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_fsdp_trains_as_one_process_and_saves_checkpoints_trace_reads(tmp_path: Path) -> None:
    model = write_tiny_model(tmp_path / "model")
    corpus = write_tiny_corpus(tmp_path / "corpus.jsonl")
    processes = min(2, torch.cuda.device_count())
    train = ["train", "--model", f"hf:{model}", "--corpus", str(corpus), *SETTINGS]
    _run([sys.executable, "-m", "crossknow", *train, "--out", str(tmp_path / "one"), "--micro-batch-size", "2"],
         tmp_path)
    _run([sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(CONFIG), "--num_processes",
          str(processes), "--mixed_precision", "no", "-m", "crossknow", *train, "--out", str(tmp_path / "fsdp"),
          "--micro-batch-size", str(2 // processes)], tmp_path)

    one = pq.read_table(tmp_path / "one" / "train_log.parquet").to_pylist()
    sharded = pq.read_table(tmp_path / "fsdp" / "train_log.parquet").to_pylist()
    assert [(r["step"], r["tokens"]) for r in sharded] == [(r["step"], r["tokens"]) for r in one]
    for row, ref in zip(sharded, one, strict=True):
        assert row["loss"] == pytest.approx(ref["loss"], rel=1e-4), (row, ref)

    items = write_items(tmp_path / "items.jsonl", 8)
    for run in ("one", "fsdp"):
        _run([sys.executable, "-m", "crossknow", "trace", "--checkpoints", str(tmp_path / run), "--data", str(items),
              "--out", str(tmp_path / f"trace-{run}"), "--device", "cuda"], tmp_path)
    traced = {run: pq.read_table(tmp_path / f"trace-{run}" / "trace.parquet").to_pandas() for run in ("one", "fsdp")}
    assert sorted(set(traced["fsdp"]["step"])) == [0, 2, 4]
    assert traced["fsdp"]["loss"].to_numpy() == pytest.approx(traced["one"]["loss"].to_numpy(), rel=1e-3)
