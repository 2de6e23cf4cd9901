"""The causal-LM loss with the output layer applied to the labelled positions only.

A transformers causal LM projects every position onto the vocabulary and then leaves padding and prompt positions
out of the loss; with Gemma 3's 262,144 words that projection is most of a small model's step, and its logits most
of the memory. `LabelledLossTrainer` computes the same loss from the decoder's hidden states at the positions that
carry a label (crossknow's choice; the model's own forward where that is not known to be the same, `plain_head`),
through `head_loss.head_cross_entropy`.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import PreTrainedModel

from crossknow.models.logit_head import logit_scaling
from crossknow.training.collate import IGNORED_LABEL
from crossknow.training.frozen_shard import FrozenShardTrainer
from crossknow.training.head_loss import head_cross_entropy


def plain_head(model: Any) -> torch.nn.Linear | None:
    """The output layer of `model` when its forward is decoder, then this bias-free linear layer, then the loss on
    float32 logits (no scale or soft cap on the logits); else None."""
    if not isinstance(model, PreTrainedModel) or model.get_decoder() is None:
        return None
    head = model.get_output_embeddings()
    if type(head) is not torch.nn.Linear or head.bias is not None or logit_scaling(model.config) != (1.0, None):
        return None
    return head


def labelled_loss(
    hidden: torch.Tensor, head: torch.nn.Linear, labels: torch.Tensor, num_items: torch.Tensor | int | None
) -> torch.Tensor:
    """transformers' causal-LM loss (`ForCausalLMLoss`): position i predicts labels[i + 1]; the sum over labelled
    positions divided by `num_items`, or their mean without it; computed on those positions alone."""
    following = torch.nn.functional.pad(labels, (0, 1), value=IGNORED_LABEL)[..., 1:]
    kept = following != IGNORED_LABEL
    targets = following[kept].to(hidden.device)
    total = head_cross_entropy(hidden[kept], head.weight, targets).sum()
    if num_items is None:
        return total / len(targets)
    return total / (num_items.to(total.device) if torch.is_tensor(num_items) else num_items)


class LabelledLossTrainer(FrozenShardTrainer):
    """transformers' Trainer, its loss computed by `labelled_loss` when one process trains an unwrapped model with a
    `plain_head` and the Trainer's own loss would be the model's (no label smoothing, no custom loss function); its
    checkpoints share their frozen weights (`FrozenShardTrainer`)."""

    def compute_loss(
        self, model: Any, inputs: dict[str, Any], return_outputs: bool = False,
        num_items_in_batch: torch.Tensor | int | None = None,
    ) -> Any:
        base = model.get_base_model() if hasattr(model, "get_base_model") else model  # a PEFT model's own
        head = plain_head(base)
        if (head is None or return_outputs or "labels" not in inputs or "shift_labels" in inputs
                or self.label_smoother is not None or self.compute_loss_func is not None
                or self.accelerator.num_processes != 1 or self.is_deepspeed_enabled or self.is_fsdp_enabled):
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        features = {key: value for key, value in inputs.items() if key != "labels"}
        hidden = base.get_decoder()(**features)[0]
        num_items = num_items_in_batch if self.model_accepts_loss_kwargs else None
        return labelled_loss(hidden, head, inputs["labels"], num_items)
