"""The Trainer's engine options of `crossknow train` and `pitfalls finetune`: gradient checkpointing (the same steps,
the blocks recomputed) and `--report-to` (a Trainer integration that is not there is refused before anything runs)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from crossknow.errors import CrossknowError
from crossknow.training.records import TrainConfig
from crossknow.training.trainer import run_train

from ..cli.in_process import user_error
from ..gpu.tiny_hf_model import write_tiny_model
from .tiny_run import checkpoint_tensors, tiny_config, write_tiny_corpus

BLOCKS = 4
"""Decoder blocks of the tiny random Gemma 3 (tests/gpu/tiny_hf_model.py)."""

SETTINGS = {"packing": "masked", "max_length": 140, "learning_rate": 2e-5, "max_steps": 2, "save_every_steps": 2,
            "train_layers": "last:1"}
"""Two steps of one forward pass (batch 2 of 2), the last block trained: its inputs need no gradient, the case where
reentrant checkpointing computes none."""


@pytest.mark.slow
def test_gradient_checkpointing_recomputes_the_blocks_and_takes_the_same_steps(tmp_path: Path, monkeypatch) -> None:
    import torch
    from transformers.models.gemma3 import modeling_gemma3

    model = write_tiny_model(tmp_path / "model")
    corpus = write_tiny_corpus(tmp_path / "corpus.jsonl")
    forward = modeling_gemma3.Gemma3MLP.forward
    calls = [0]

    def counted(self, *args, **kwargs):
        calls[0] += self.training  # training passes only: not the packing check's forward pass
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(modeling_gemma3.Gemma3MLP, "forward", counted)  # inside the checkpointed block
    runs = {}
    for checkpointing in (False, True):
        calls[0] = 0
        out = tmp_path / f"checkpointing-{checkpointing}"
        run_train(tiny_config(corpus, model=f"hf:{model}", gradient_checkpointing=checkpointing, **SETTINGS), out)
        weights = checkpoint_tensors(out / "checkpoints" / "checkpoint-2")
        runs[checkpointing] = (calls[0], pq.read_table(out / "train_log.parquet").to_pylist(), weights)

    (plain_calls, plain_log, plain_weights), (calls_with, log_with, weights_with) = runs[False], runs[True]
    # Every block of every forward pass of the 2 steps ran again in the backward pass; nothing else changed.
    assert calls_with - plain_calls == BLOCKS * SETTINGS["max_steps"]
    assert [(r["step"], r["tokens"]) for r in log_with] == [(r["step"], r["tokens"]) for r in plain_log]
    for row, plain in zip(log_with, plain_log, strict=True):
        assert row["loss"] == pytest.approx(plain["loss"], rel=1e-6)
        assert row["grad_norm"] == pytest.approx(plain["grad_norm"], rel=1e-5)  # a gradient, so it trained
        assert row["grad_norm"] > 0
    assert weights_with.keys() == plain_weights.keys()
    for name, tensor in weights_with.items():
        assert torch.allclose(tensor, plain_weights[name], rtol=0, atol=1e-7), name


def test_report_to_refuses_an_integration_that_is_unknown_or_not_installed(tmp_path: Path, monkeypatch,
                                                                           capsys) -> None:
    corpus = write_tiny_corpus(tmp_path / "corpus.jsonl")
    out = tmp_path / "run"
    unknown = user_error(monkeypatch, capsys, tmp_path, "train", "--corpus", str(corpus), "--out", str(out),
                         "--report-to", "tensorbord")
    assert "--report-to: 'tensorbord' is no integration of transformers' Trainer (it has" in unknown
    assert "tensorboard" in unknown and "wandb" in unknown
    from transformers.integrations.integration_utils import get_available_reporting_integrations

    installed = get_available_reporting_integrations()
    missing = next(name for name in ("tensorboard", "wandb", "mlflow") if name not in installed)
    absent = user_error(monkeypatch, capsys, tmp_path, "pitfalls", "finetune", "--train-pairs", str(corpus),
                        "--out", str(out), "--report-to", missing)
    assert f"--report-to: '{missing}' is not installed here" in absent
    assert not out.exists()  # refused before a run directory was made
    assert TrainConfig(corpus="c.jsonl").report_to == []  # unset: no integration


@pytest.mark.slow
def test_report_to_tensorboard_logs_the_step_logs_losses(tmp_path: Path) -> None:
    """The Trainer's TensorBoard integration (tensorboardX here) writes each step's loss; read back from its event
    file, record by record (TFRecord framing: length, its CRC, the event, its CRC), they are the step log's."""
    import struct

    from tensorboardX.proto.event_pb2 import Event

    model = write_tiny_model(tmp_path / "model")
    corpus = write_tiny_corpus(tmp_path / "corpus.jsonl")
    out = tmp_path / "run"
    run_train(tiny_config(corpus, model=f"hf:{model}", report_to=["tensorboard"],
                          **{**SETTINGS, "max_steps": 3, "save_every_steps": 3}), out)
    (events,) = (out / "checkpoints" / "runs").glob("*/events.out.tfevents.*")
    data, losses = events.read_bytes(), {}
    while data:
        (length,) = struct.unpack("<Q", data[:8])
        event = Event.FromString(data[12 : 12 + length])
        data = data[12 + length + 4 :]
        for value in event.summary.value:
            if value.tag == "train/loss":
                losses[event.step] = value.simple_value
    logged = {row["step"]: row["loss"] for row in pq.read_table(out / "train_log.parquet").to_pylist()}
    assert losses.keys() == logged.keys() == {1, 2, 3}
    assert all(losses[step] == pytest.approx(logged[step], rel=1e-6) for step in logged)


def test_a_run_from_before_these_options_resumes_at_their_defaults_only(tmp_path: Path) -> None:
    """A config.yaml written before the options existed lacks them: at their defaults (no LoRA) the run is the same
    run; asking for LoRA on it is another run."""
    import yaml

    from crossknow.store.config_keys import volatile_keys
    from crossknow.store.run_dir import RunDir

    recorded = TrainConfig(corpus="c.jsonl").model_dump()
    for key in ("gradient_checkpointing", "report_to", "lora_rank", "lora_alpha", "lora_targets"):
        del recorded[key]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(recorded), encoding="utf-8")
    (tmp_path / "inputs.json").write_text("{}", encoding="utf-8")

    def resume(config: TrainConfig) -> None:
        with RunDir(tmp_path) as run:
            run.open(config.model_dump(), {}, volatile=volatile_keys(TrainConfig), has_results=True,
                     upgrade=TrainConfig.upgrade)

    resume(TrainConfig(corpus="c.jsonl", gradient_checkpointing=True))
    with pytest.raises(CrossknowError, match=r"another config \(lora_rank: None -> 8\)"):
        resume(TrainConfig(corpus="c.jsonl", lora_rank=8))
