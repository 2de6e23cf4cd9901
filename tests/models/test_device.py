"""--device: a mistyped value is refused when the config is read, a CUDA device this machine lacks when the
model would load, each in one line naming the value; training never falls back to the CPU in silence."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from pydantic import TypeAdapter, ValidationError

from crossknow.errors import CrossknowError
from crossknow.models.device import Device, resolve_device
from crossknow.training.records import TrainConfig
from tests.cli.in_process import user_error
from tests.cli.test_cli import assert_nothing_half_done
from tests.training.tiny_run import tiny_cli_args, tiny_config, write_tiny_corpus

NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="checks a machine without CUDA")


@pytest.mark.parametrize("value", ["auto", "cpu", "cuda", "cuda:0", "cuda:12"])
def test_the_accepted_devices(value):
    assert TypeAdapter(Device).validate_python(value) == value


@pytest.mark.parametrize("value", ["gpu", "CUDA", "cuda:", "cuda:x", "cuda:-1", "mps", " cpu", ""])
def test_mistyped_devices_are_refused_naming_the_value(value):
    with pytest.raises(ValidationError, match="expected auto, cpu, cuda or cuda:N"):
        TypeAdapter(Device).validate_python(value)
    with pytest.raises(CrossknowError, match=f"--device: expected auto, cpu, cuda or cuda:N, got {value!r}"):
        resolve_device(value)


def test_training_takes_no_device_index(tmp_path: Path):
    """transformers' Trainer picks the GPU itself: cuda:1 would train on cuda:0."""
    assert tiny_config(tmp_path / "c.jsonl", device="cuda").device == "cuda"
    with pytest.raises(ValidationError):
        TrainConfig(model="default", corpus="c.jsonl", device="cuda:1")


def test_a_device_beyond_this_machines_is_refused_naming_what_torch_sees():
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    with pytest.raises(CrossknowError, match=f"--device cuda:{count}: torch sees .* on this machine"):
        resolve_device(f"cuda:{count}")
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda" if count else "cpu")


@NO_CUDA
@pytest.mark.may_skip
def test_cuda_on_a_machine_without_it_is_refused():
    with pytest.raises(CrossknowError, match=r"--device cuda: torch sees no CUDA device \(torch .*\).*--device cpu"):
        resolve_device("cuda")


def test_evaluate_refuses_a_mistyped_device_before_writing(tmp_path: Path, monkeypatch, capsys):
    out = tmp_path / "run"
    stderr = user_error(monkeypatch, capsys, tmp_path, "evaluate", "--data", "sample", "--device", "gpu", "--out",
                        str(out))
    assert "--device" in stderr and "'gpu'" in stderr
    assert not out.exists()


@NO_CUDA
@pytest.mark.may_skip
def test_evaluate_and_train_on_cuda_without_it_stop_in_one_line(tmp_path: Path, monkeypatch, capsys):
    out = tmp_path / "eval"
    stderr = user_error(monkeypatch, capsys, tmp_path, "evaluate", "--data", "sample", "--device", "cuda", "--out",
                        str(out))
    assert "--device cuda: torch sees no CUDA device" in stderr
    assert_nothing_half_done(out)

    corpus = write_tiny_corpus(tmp_path / "corpus.jsonl")
    args = [*tiny_cli_args(corpus, tmp_path / "train"), "--device", "cuda"]  # the last --device wins
    line = user_error(monkeypatch, capsys, tmp_path, *args)
    assert "--device cuda: torch sees no CUDA device" in line
    assert not list((tmp_path / "train").glob("checkpoints/checkpoint-*"))
