"""Which config keys may differ on resume is declared on the fields (`Annotated[T, VOLATILE]`), and every command's
config follows one rule: what only says how a model is reached or paced may differ, what decides a result may not."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import BaseModel, ValidationError

from crossknow.adaxeval.records import GenerateConfig
from crossknow.dynamics.sequence_inputs import SequenceLossConfig
from crossknow.dynamics.trace_config import TraceConfig
from crossknow.eclektic.build_records import BuildConfig
from crossknow.eclektic.run_config import EclekticConfig
from crossknow.evaluation.records import EvaluateConfig
from crossknow.models.device import Device
from crossknow.perturb.records import PerturbConfig
from crossknow.pitfalls.affinity.expansion_records import ExpandConfig
from crossknow.pitfalls.affinity.run import AffinityConfig
from crossknow.pitfalls.categorize.run import CategorizeConfig
from crossknow.pitfalls.eval_records import PitfallsEvalConfig
from crossknow.pitfalls.finetune.records import PitfallsFinetuneConfig
from crossknow.store.config_keys import VOLATILE, volatile_keys
from crossknow.training.records import TrainConfig

CONFIGS = (GenerateConfig, SequenceLossConfig, TraceConfig, BuildConfig, EclekticConfig, EvaluateConfig, PerturbConfig,
           ExpandConfig, AffinityConfig, CategorizeConfig, PitfallsEvalConfig, PitfallsFinetuneConfig, TrainConfig)
"""Every config that a command records in its run directory and checks on resume."""

REACH_OR_PACE = {"concurrency", "timeout_s", "api_key_env", "cache", "prices", "judge_api_key_env", "eval_batch_size",
                 "qa_concurrency", "qa_timeout_s", "qa_api_key_env", "qa_cache", "qa_base_url"}
"""Fields that say how a model is reached or how fast it is asked: they cannot change a result."""

DECIDES_RESULTS = {"model", "models", "seed", "temperature", "max_tokens", "max_attempts", "limit", "langs", "rule",
                   "dtype", "learning_rate", "max_steps", "answering", "method"}
"""Fields that change what a run computes."""


def test_volatile_keys_come_from_the_fields_inherited_ones_included_and_validation_stays():
    class Base(BaseModel):
        batch_size: Annotated[int, VOLATILE] = 8
        seed: int = 0
        device: Annotated[Device, VOLATILE] = "cpu"

    class Child(Base):
        base_url: Annotated[str | None, VOLATILE] = None
        limit: int | None = None

    assert volatile_keys(Base) == ("batch_size", "device")
    assert volatile_keys(Child) == ("batch_size", "device", "base_url")
    with pytest.raises(ValidationError, match="expected auto, cpu, cuda or cuda:N"):
        Child(device="gpu")  # the marker leaves the field's own type and checks in place


@pytest.mark.parametrize("config", CONFIGS, ids=lambda config: config.__name__)
def test_every_command_config_keeps_results_fixed_and_lets_transport_change(config):
    fields, volatile = set(config.model_fields), set(volatile_keys(config))
    assert volatile, "a resumable command has settings that cannot change its results"
    assert fields & REACH_OR_PACE <= volatile
    assert not fields & DECIDES_RESULTS & volatile
