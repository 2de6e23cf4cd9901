"""The cross-entropy of hidden rows through a model's output layer, for training: on the CPU in float32 the projection
runs in vocabulary slices.

oneDNN's float32 product of a few hundred rows against Gemma 3's 262,144-word output layer runs well below the rate
of the same product in slices of `logit_head.SLICE` words (docs/speed.md, "A training step"), and a training step of
a small model is mostly that product. So `head_cross_entropy` computes the logits slice by slice into one buffer,
transposed so that each slice is a contiguous block, and its backward turns that buffer into the gradient in place
(crossknow's choice). The sums are the same; their rounding differs from one whole product by float32 noise.
"""

from __future__ import annotations

from typing import Any

import torch

from crossknow.models.logit_head import SLICE


class _SlicedCrossEntropy(torch.autograd.Function):
    """Per-row cross-entropy of `hidden @ weight.T` against `targets`, the projection in slices (module docstring)."""

    @staticmethod
    def forward(ctx: Any, hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = hidden.new_empty((weight.shape[0], hidden.shape[0]))  # vocabulary x rows
        partial = []  # each slice's log-sum-exp: short sums, as accurate as torch's own along a row
        for start in range(0, weight.shape[0], SLICE):
            torch.mm(weight[start : start + SLICE], hidden.t(), out=logits[start : start + SLICE])
            partial.append(torch.logsumexp(logits[start : start + SLICE], dim=0))
        normaliser = torch.logsumexp(torch.stack(partial), dim=0)
        losses = normaliser - logits[targets, torch.arange(len(targets))]
        ctx.save_for_backward(hidden, weight, targets, logits, normaliser)
        return losses

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None, None]:
        hidden, weight, targets, logits, normaliser = ctx.saved_tensors
        gradient = logits.sub_(normaliser).exp_()  # softmax, in the logits' own memory (one backward per forward)
        gradient[targets, torch.arange(len(targets))] -= 1
        gradient.mul_(grad)
        grad_hidden = grad_weight = None
        if ctx.needs_input_grad[0]:
            grad_hidden = hidden.new_zeros(hidden.shape)
            for start in range(0, weight.shape[0], SLICE):
                grad_hidden.addmm_(gradient[start : start + SLICE].t(), weight[start : start + SLICE])
        if ctx.needs_input_grad[1]:
            grad_weight = gradient @ hidden
        return grad_hidden, grad_weight, None


def head_cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Per-row cross-entropy (nats) of the logits `hidden @ weight.T` in float32 against `targets`: in vocabulary
    slices for float32 on the CPU without autocast (module docstring), else through torch's own product and loss."""
    if (hidden.device.type == "cpu" and hidden.dtype == weight.dtype == torch.float32
            and not torch.is_autocast_enabled("cpu")):
        return _SlicedCrossEntropy.apply(hidden, weight, targets)
    logits = torch.nn.functional.linear(hidden, weight).float()
    return torch.nn.functional.cross_entropy(logits, targets, reduction="none")
