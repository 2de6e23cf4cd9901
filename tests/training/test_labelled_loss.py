"""The Trainer's loss on the labelled positions only (crossknow.training.labelled_loss) against transformers' own
Trainer loss, on a tiny random Gemma 3 (tied head), its LoRA model and a soft-capped variant; tests/families runs
the same check on Llama, Qwen2 and Phi-3."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from crossknow.training import labelled_loss
from crossknow.training.collate import IGNORED_LABEL, SequenceCollator
from crossknow.training.head_loss import head_cross_entropy
from tests.gpu.tiny_hf_model import write_tiny_model

torch = pytest.importorskip("torch")

ROWS = [  # one short row (padded), one long row, one packed row of two texts (position ids restart)
    {"input_ids": [2, 17, 40, 41, 90], "position_ids": [0, 1, 2, 3, 4]},
    {"input_ids": [2, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], "position_ids": list(range(12))},
    {"input_ids": [2, 30, 31, 32, 2, 50, 51, 52, 53], "position_ids": [0, 1, 2, 3, 0, 1, 2, 3, 4]},
]


def check_trainer_loss(model: Any, out: Path, pad_token_id: int = 0) -> None:
    """LabelledLossTrainer's loss and gradients equal transformers' Trainer's on ROWS (ids taken modulo the model's
    vocabulary), with and without a token count, and its output layer projects the labelled positions alone."""
    from transformers import Trainer, TrainingArguments

    from crossknow.training.labelled_loss import LabelledLossTrainer

    vocab = model.get_input_embeddings().weight.shape[0]
    rows = [{**row, "input_ids": [i % vocab for i in row["input_ids"]]} for row in ROWS]
    args = TrainingArguments(output_dir=str(out), use_cpu=True, report_to="none", disable_tqdm=True)
    trainer = LabelledLossTrainer(model=model, args=args)
    batch = SequenceCollator(pad_token_id)(rows)
    labelled = int((batch["labels"][:, 1:] != IGNORED_LABEL).sum())
    assert labelled < batch["labels"].numel() - len(rows)  # padding and packing leave positions out
    projected: list[int] = []  # rows the model's own forward projects
    ours: list[int] = []  # rows the labelled loss projects
    head = (model.get_base_model() if hasattr(model, "get_base_model") else model).get_output_embeddings()
    hook = head.register_forward_hook(lambda _module, args, _out: projected.append(args[0][..., 0].numel()))

    def counted(hidden: Any, weight: Any, targets: Any) -> Any:
        ours.append(len(hidden))
        return head_cross_entropy(hidden, weight, targets)

    patched = mock.patch.object(labelled_loss, "head_cross_entropy", counted)
    patched.start()
    try:
        for num_items in (torch.tensor(labelled + 7), None):  # +7: a count of the whole accumulated batch
            results = []
            for compute in (trainer.compute_loss, lambda *a, **k: Trainer.compute_loss(trainer, *a, **k)):
                model.zero_grad()
                loss = compute(model, dict(batch), num_items_in_batch=num_items)
                loss.backward()
                grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
                results.append((loss.item(), grads))
            (our_loss, our_grads), (their_loss, their_grads) = results
            assert our_loss == pytest.approx(their_loss, rel=1e-6)
            assert our_grads.keys() == their_grads.keys() and our_grads
            for name, grad in our_grads.items():
                assert torch.allclose(grad, their_grads[name], rtol=1e-4, atol=1e-6), name
    finally:
        hook.remove()
        patched.stop()
    assert ours[0] == labelled and projected[0] == batch["labels"].numel()


@pytest.fixture(scope="module")
def tiny_gemma(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("labelled-loss") / "model")


def test_the_labelled_loss_is_the_trainers_loss_on_gemma3(tiny_gemma: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_gemma, dtype=torch.float32)
    model.train()
    check_trainer_loss(model, tmp_path)


def test_the_labelled_loss_is_the_trainers_loss_on_a_lora_model(tiny_gemma: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    from crossknow.training.lora import with_lora

    model, _, _ = with_lora(AutoModelForCausalLM.from_pretrained(tiny_gemma, dtype=torch.float32), 4, 8.0,
                            "all-linear")
    model.train()
    check_trainer_loss(model, tmp_path)


def test_a_soft_capped_head_keeps_the_models_own_loss(tiny_gemma: Path) -> None:
    from transformers import AutoModelForCausalLM

    from crossknow.training.labelled_loss import plain_head

    model = AutoModelForCausalLM.from_pretrained(tiny_gemma, dtype=torch.float32)
    assert plain_head(model) is model.get_output_embeddings()
    model.config.final_logit_softcapping = 30.0
    assert plain_head(model) is None
