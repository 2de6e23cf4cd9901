"""LoRA training through peft: the model to train wrapped with adapters, everything else frozen.

The Trainer then saves each checkpoint as the adapters only (adapter_model.safetensors, adapter_config.json, which
names the base model), and `crossknow.models.adapter_cache` merges a checkpoint into its base when it is scored.
"""

from __future__ import annotations

from typing import Any

from crossknow.errors import MissingDependencyError


def with_lora(model: Any, rank: int, alpha: float | None, targets: str) -> tuple[Any, int, int]:
    """(`model` with LoRA adapters of `rank` on its `targets` (TrainConfig.lora_targets), trainable, total
    parameters)."""
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError as error:  # pragma: no cover - exercised only without the hf extra
        raise MissingDependencyError("peft", "hf", "LoRA training (--lora-rank)") from error
    modules = {"auto": None, "all-linear": "all-linear"}.get(
        targets, [name.strip() for name in targets.split(",") if name.strip()])
    lora = LoraConfig(r=rank, lora_alpha=alpha or 2 * rank, target_modules=modules, lora_dropout=0.0,
                      task_type="CAUSAL_LM")
    adapted = get_peft_model(model, lora)
    trainable, total = adapted.get_nb_trainable_parameters()
    return adapted, trainable, total
