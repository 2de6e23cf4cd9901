"""Checkpoint discovery for `crossknow trace`, over constructed model directories (config.json and an empty
weights file: discovery never loads a model)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from crossknow.dynamics.checkpoints import Checkpoint, discover_checkpoints
from crossknow.errors import CrossknowError
from crossknow.models.specs import weights_hash


def model_dir(path: Path, trainer: bool = False, finished: bool = True, weights: str = "model.safetensors") -> Path:
    """A model directory; with `trainer`, a transformers Trainer checkpoint, `finished` or cut short."""
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}", encoding="utf-8")
    if weights:
        (path / weights).write_bytes(b"")
    if trainer:
        (path / "training_args.bin").write_bytes(b"")
        if finished:
            (path / "trainer_state.json").write_text("{}", encoding="utf-8")
    return path


def train_run(path: Path, model: str = "default", steps: tuple[int, ...] = (2, 10)) -> Path:
    """A `crossknow train` run directory: config.yaml naming the base model, and finished checkpoints."""
    path.mkdir(parents=True)
    (path / "config.yaml").write_text(yaml.safe_dump({"model": model, "corpus": "c.jsonl"}), encoding="utf-8")
    for step in steps:
        model_dir(path / "checkpoints" / f"checkpoint-{step}", trainer=True)
    return path


def steps_and_specs(checkpoints: list[Checkpoint]) -> list[tuple[int, str]]:
    """(step, spec) of each checkpoint."""
    return [(c.step, c.spec) for c in checkpoints]


def test_a_train_run_is_its_base_model_then_its_finished_checkpoints(tmp_path: Path) -> None:
    run = train_run(tmp_path / "run", steps=(10, 2, 9))
    model_dir(run / "checkpoints" / "checkpoint-12", trainer=True, finished=False)  # being saved: skipped
    found = discover_checkpoints([str(run)])
    assert steps_and_specs(found) == [
        (0, "default"),
        (2, f"hf:{run / 'checkpoints' / 'checkpoint-2'}"),
        (9, f"hf:{run / 'checkpoints' / 'checkpoint-9'}"),
        (10, f"hf:{run / 'checkpoints' / 'checkpoint-10'}"),
    ]
    assert [c.label for c in found] == ["base (default)", "checkpoint-2", "checkpoint-9", "checkpoint-10"]
    assert steps_and_specs(discover_checkpoints([f"hf:{run}"])) == steps_and_specs(found)


def test_a_train_run_from_another_model_starts_from_that_model(tmp_path: Path) -> None:
    run = train_run(tmp_path / "run", model="hf:/models/llm-jp@main", steps=(5,))
    assert steps_and_specs(discover_checkpoints([str(run)]))[0] == (0, "hf:/models/llm-jp@main")


def test_a_train_run_config_without_a_model_is_an_error(tmp_path: Path) -> None:
    run = train_run(tmp_path / "run")
    (run / "config.yaml").write_text("corpus: c.jsonl\n", encoding="utf-8")
    with pytest.raises(CrossknowError, match="no 'model' entry"):
        discover_checkpoints([str(run)])


def test_a_directory_of_checkpoints_in_either_naming(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    model_dir(sweep / "step-100")
    model_dir(sweep / "step_300", weights="pytorch_model.bin")
    model_dir(sweep / "checkpoint200")
    model_dir(sweep / "step-400", weights="")  # no weights: skipped
    model_dir(sweep / "final")  # no step in its name: not part of the sweep
    (sweep / "logs").mkdir()
    (sweep / "checkpoint-500").write_text("a file, not a directory", encoding="utf-8")
    found = discover_checkpoints([str(sweep)])
    assert steps_and_specs(found) == [(100, f"hf:{sweep / 'step-100'}"), (200, f"hf:{sweep / 'checkpoint200'}"),
                                      (300, f"hf:{sweep / 'step_300'}")]


def test_a_trainer_checkpoint_without_trainer_state_is_skipped(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    model_dir(sweep / "checkpoint-1", trainer=True)
    model_dir(sweep / "checkpoint-2", trainer=True, finished=False)
    model_dir(sweep / "checkpoint-3")  # not written by a Trainer: no trainer_state.json expected
    assert [c.step for c in discover_checkpoints([str(sweep)])] == [1, 3]


def test_one_model_directory(tmp_path: Path) -> None:
    path = model_dir(tmp_path / "checkpoint-7")
    assert discover_checkpoints([str(path)]) == [Checkpoint(7, f"hf:{path}", "checkpoint-7")]
    unfinished = model_dir(tmp_path / "checkpoint-8", trainer=True, finished=False)
    with pytest.raises(CrossknowError, match="did not finish"):
        discover_checkpoints([str(unfinished)])


def test_a_model_directory_without_a_step_needs_one(tmp_path: Path) -> None:
    path = model_dir(tmp_path / "final")
    with pytest.raises(CrossknowError, match=r"no step in the name 'final'; write STEP="):
        discover_checkpoints([str(path)])
    assert steps_and_specs(discover_checkpoints([f"50={path}"])) == [(50, f"hf:{path}")]


def test_default_and_hub_revisions() -> None:
    found = discover_checkpoints(["hf:org/model@stage1-step1000-tokens4B", "default", "hf:org/model@step_250",
                                  "hf:org/model@rev42"])
    assert steps_and_specs(found) == [(0, "default"), (42, "hf:org/model@rev42"),
                                      (250, "hf:org/model@step_250"), (1000, "hf:org/model@stage1-step1000-tokens4B")]
    assert [c.label for c in found][1:] == ["rev42", "step_250", "stage1-step1000-tokens4B"]
    with pytest.raises(CrossknowError, match="no step in revision 'main'; write STEP="):
        discover_checkpoints(["hf:org/model@main"])
    assert steps_and_specs(discover_checkpoints(["7=hf:org/model@main"])) == [(7, "hf:org/model@main")]


def test_step_prefix_overrides_the_step(tmp_path: Path) -> None:
    path = model_dir(tmp_path / "checkpoint-7")
    assert steps_and_specs(discover_checkpoints([f"70={path}", "5=default"])) == [(5, "default"), (70, f"hf:{path}")]
    run = train_run(tmp_path / "run")
    with pytest.raises(CrossknowError, match="holds 3 checkpoints, not one"):
        discover_checkpoints([f"3={run}"])


def test_a_path_with_an_equals_sign_is_not_a_step_prefix(tmp_path: Path) -> None:
    path = model_dir(tmp_path / "lr=1e-4" / "checkpoint-3")
    assert steps_and_specs(discover_checkpoints([str(path)])) == [(3, f"hf:{path}")]


def test_two_checkpoints_at_one_step_are_an_error(tmp_path: Path) -> None:
    run = train_run(tmp_path / "run")
    with pytest.raises(CrossknowError, match=r"step\(s\) \[0\]"):
        discover_checkpoints(["default", str(run)])
    with pytest.raises(CrossknowError, match=r"step\(s\) \[2\]"):
        discover_checkpoints([str(run), f"2={model_dir(tmp_path / 'other')}"])


def test_sources_that_hold_nothing_are_errors(tmp_path: Path) -> None:
    with pytest.raises(CrossknowError, match="not a directory"):
        discover_checkpoints([str(tmp_path / "absent")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(CrossknowError, match="no checkpoint-STEP or step-STEP model directories"):
        discover_checkpoints([str(tmp_path / "empty")])
    with pytest.raises(CrossknowError, match="no checkpoints found"):
        discover_checkpoints([])


def test_checkpoint_hash_is_the_weights_content(tmp_path: Path) -> None:
    path = model_dir(tmp_path / "checkpoint-1", weights="")
    (path / "model.safetensors").write_bytes(b"weights v1")
    spec = f"hf:{path}"
    assert weights_hash(spec) == f"model.safetensors:{hashlib.sha256(b'weights v1').hexdigest()}"
    assert sorted(p.name for p in path.iterdir()) == ["config.json", "model.safetensors"]  # the model dir unwritten
    (path / "model.safetensors").write_bytes(b"weights v2, retrained")
    assert weights_hash(spec) == f"model.safetensors:{hashlib.sha256(b'weights v2, retrained').hexdigest()}"
    assert weights_hash("hf:org/model@step5") == "hf:org/model@step5"


@pytest.mark.parametrize("source", [f"{'9' * 5000}=default", f"{'9' * 20}=default", f"hf:org/model@step{'9' * 5000}"])
def test_a_step_past_64_bits_is_refused_by_name(source):
    with pytest.raises(CrossknowError, match="is past the 64-bit range"):
        discover_checkpoints([source])
