"""Checkpoints of a training run written from one model, as `crossknow train --train-layers last:1` leaves them."""

from __future__ import annotations

import shutil
from pathlib import Path


def write_moved_checkpoints(model_dir: Path, root: Path, steps: int = 3) -> Path:
    """checkpoint-0 (the model) to checkpoint-{steps - 1} in `root`, each later one with only the last decoder block's
    weights moved by seeded noise; the tokenizer files are copied, byte for byte."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    tokenizer_files = [path for path in model_dir.iterdir() if path.name.startswith(("tokenizer", "special_tokens"))]
    last = f"layers.{model.config.num_hidden_layers - 1}."
    generator = torch.Generator().manual_seed(1)
    for step in range(steps):
        with torch.no_grad():
            for name, parameter in model.named_parameters():
                if step and last in name:
                    parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
        model.save_pretrained(root / f"checkpoint-{step}")
        for path in tokenizer_files:
            shutil.copy(path, root / f"checkpoint-{step}" / path.name)
    return root
