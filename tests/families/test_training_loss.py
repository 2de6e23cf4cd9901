"""The Trainer's loss on the labelled positions only, equal to transformers' own on every family's tiny model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.training.test_labelled_loss import check_trainer_loss

torch = pytest.importorskip("torch")


def test_the_labelled_loss_is_the_trainers_loss(family_model, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    family, model_dir = family_model
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    model.train()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    check_trainer_loss(model, tmp_path, tokenizer.pad_token_id or tokenizer.eos_token_id or 0)
