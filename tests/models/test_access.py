"""The model-access record embedded once per role (`crossknow.models.access`): flat keys folded into the records,
the command line's options built from them, and a run written before the records resumed field by field."""

from __future__ import annotations

import pytest
import yaml
from pydantic import Field, ValidationError
from typer.testing import CliRunner

from crossknow.cli.app import app
from crossknow.eclektic.run_config import EclekticConfig
from crossknow.errors import CrossknowError
from crossknow.evaluation.records import EvaluateConfig
from crossknow.models.access import ModelAccess, ModelRole, ModelsRole, RoleConfig, RoleKeys
from crossknow.store.config_keys import volatile_keys
from crossknow.store.run_dir import RunDir


class Judged(RoleConfig):
    """A config with a required role, an optional one of several models, own and shared keys."""

    ROLES = (RoleKeys("model", own=("base_url",)), RoleKeys("judges", own=("base_url",), prefix="judge_"))
    SHARED = ("device", "timeout_s")
    model: ModelRole = Field(description="m")
    judges: ModelsRole | None = Field(default=None, description="j")


def test_a_shared_key_sets_every_role_and_an_own_key_its_role_alone():
    config = Judged(model="a", judges=["b", "c"], base_url="http://m", judge_base_url="http://j", device="cpu",
                    timeout_s=9)
    assert config.model == ModelRole(spec="a", base_url="http://m", device="cpu", timeout_s=9)
    assert config.judges == ModelsRole(specs=["b", "c"], base_url="http://j", device="cpu", timeout_s=9)


def test_an_optional_role_given_no_models_is_not_played_and_takes_no_settings():
    assert Judged(model="a", judge_base_url="http://j").judges is None
    assert Judged(model="a", judges=[], device="cpu").judges is None
    with pytest.raises(ValidationError, match="model"):
        Judged(judges=["b"])


def test_the_records_as_given_equal_the_flat_keys_and_a_field_given_both_ways_is_refused():
    nested = Judged(model=ModelRole(spec="a", device="cpu"), judges={"specs": ["b"], "device": "cpu"})
    assert nested == Judged(model="a", judges=["b"], device="cpu")
    with pytest.raises(ValueError, match=r"device: model\.device is given twice"):
        Judged(model=ModelRole(spec="a", device="cpu"), device="cuda")


def test_every_role_field_has_one_default_and_volatile_fields_are_named_by_path():
    assert ModelAccess().timeout_s == 300.0 and ModelAccess().device == "auto"
    keys = volatile_keys(EclekticConfig)
    assert {"model.base_url", "model.api_key_env", "model.concurrency", "model.timeout_s", "judges"} <= set(keys)
    assert "model.device" not in keys and "model.dtype" not in keys and "model.spec" not in keys


def test_a_run_written_with_flat_keys_resumes_and_a_changed_field_is_named(tmp_path):
    run = tmp_path / "run"
    flat = {"model": "default", "data": "d.jsonl", "device": "auto", "dtype": "float32", "base_url": None,
            "api_key_env": "OPENAI_API_KEY", "batch_size": 8}
    with RunDir(run) as opened:
        opened.open(flat, {}, has_results=False)
    assert yaml.safe_load((run / "config.yaml").read_text())["device"] == "auto"  # as an older crossknow wrote it
    same = EvaluateConfig(data="d.jsonl", api_key_env="OTHER_KEY", batch_size=4).model_dump(include=set(flat))
    with RunDir(run) as opened:  # a volatile field changed: resumed
        opened.open(same, {}, volatile=volatile_keys(EvaluateConfig), has_results=True, upgrade=EvaluateConfig.upgrade)
    other = EvaluateConfig(data="d.jsonl", dtype="bfloat16").model_dump(include=set(flat))
    with RunDir(run) as opened, pytest.raises(CrossknowError, match=r"model\.dtype: 'float32' -> 'bfloat16'"):
        opened.open(other, {}, volatile=volatile_keys(EvaluateConfig), has_results=True, upgrade=EvaluateConfig.upgrade)


def test_the_command_line_sets_each_role_and_an_error_names_the_flag_that_set_it(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr("crossknow.cli.eclektic_cmd.execute", lambda config, out, stage: seen.append(config))
    args = ["eclektic", "answer", "--data", "d.jsonl", "--model", "openai:m", "--base-url", "http://m",
            "--judge", "openai:j", "--judge-base-url", "http://j", "--device", "cpu", "--out", str(tmp_path)]
    assert CliRunner().invoke(app, args).exit_code == 0
    assert (seen[0].model.base_url, seen[0].judges.base_url) == ("http://m", "http://j")
    assert seen[0].model.device == seen[0].judges.device == "cpu"
    refused = CliRunner().invoke(app, [*args, "--concurrency", "0"])
    assert str(refused.exception) == "--concurrency: Input should be greater than or equal to 1"


def test_a_run_recorded_before_the_engine_choice_resumes_on_transformers_only(tmp_path):
    def dump(**changes):
        return EclekticConfig(data="d.jsonl", model="default", judge_free=["recall"], **changes).model_dump()

    written = dump()
    del written["model"]["generator_backend"]  # as crossknow wrote it before the choice existed
    run = tmp_path / "run"
    with RunDir(run) as opened:
        opened.open(written, {}, has_results=False)
    assert EclekticConfig.recorded(written)["model"]["generator_backend"] == "transformers"
    refused = r"model\.generator_backend: 'transformers' -> 'auto'"
    with RunDir(run) as opened, pytest.raises(CrossknowError, match=refused):
        opened.open(dump(), {}, has_results=True, upgrade=EclekticConfig.recorded)
    with RunDir(run) as opened:  # the engine those runs used: resumed
        opened.open(dump(generator_backend="transformers"), {}, has_results=True, upgrade=EclekticConfig.recorded)
    assert EclekticConfig.recorded(dump())["model"]["generator_backend"] == "auto"  # a recorded choice is kept
    flat = EvaluateConfig(data="d.jsonl").model_dump()
    del flat["model"]["generator_backend"]  # evaluate takes no engine choice: its default stands
    assert EvaluateConfig.recorded(flat)["model"]["generator_backend"] == "auto"
