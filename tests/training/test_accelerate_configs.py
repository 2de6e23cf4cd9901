"""The accelerate configs crossknow ships for training past one device (crossknow/samples/accelerate): each is one
that `accelerate launch --config_file` reads (its own loader refuses an unknown key), with the engine, processes and
saving that docs/distributed.md describes."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

CONFIGS = Path(str(resources.files("crossknow") / "samples" / "accelerate"))

EXPECTED = {
    "one-gpu.yaml": ("NO", 1, 1),
    "fsdp-8gpu.yaml": ("FSDP", 8, 1),
    "fsdp-2nodes.yaml": ("FSDP", 16, 2),
    "deepspeed-zero3-8gpu.yaml": ("DEEPSPEED", 8, 1),
}
"""File -> (distributed type, processes, machines)."""


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_accelerate_reads_each_config_as_documented(name: str) -> None:
    from accelerate.commands.config.config_args import load_config_from_file

    config = load_config_from_file(str(CONFIGS / name))
    kind, processes, machines = EXPECTED[name]
    assert (config.distributed_type.value, config.num_processes, config.num_machines) == (kind, processes, machines)
    assert config.mixed_precision == "bf16" and not config.use_cpu
    if kind == "FSDP":  # FSDP2; checkpoints saved whole, so that trace reads them; blocks wrapped by the model's list
        fsdp = config.fsdp_config
        assert fsdp["fsdp_version"] == 2 and fsdp["fsdp_state_dict_type"] == "FULL_STATE_DICT"
        assert fsdp["fsdp_auto_wrap_policy"] == "TRANSFORMER_BASED_WRAP"
        assert "fsdp_transformer_layer_cls_to_wrap" not in fsdp  # any family: the model's _no_split_modules
    if kind == "DEEPSPEED":
        assert config.deepspeed_config["zero_stage"] == 3 and config.deepspeed_config["zero3_save_16bit_model"]


def test_every_shipped_config_is_listed() -> None:
    assert sorted(path.name for path in CONFIGS.glob("*.yaml")) == sorted(EXPECTED)
