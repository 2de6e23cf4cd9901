"""The sliced cross-entropy of training (crossknow.training.head_loss) against the same loss in float64 through torch's
own product and log-softmax: per-row losses and the gradients of the hidden rows and of the output layer."""

from __future__ import annotations

import pytest

from crossknow.models.logit_head import SLICE
from crossknow.training.head_loss import head_cross_entropy

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("vocab", [3 * SLICE, 2 * SLICE + 777])  # whole slices, and a short last one
def test_losses_and_gradients_equal_a_float64_computation(vocab):
    generator = torch.Generator().manual_seed(0)
    hidden = (torch.randn(37, 48, generator=generator) * 2).requires_grad_(True)
    weight = (torch.randn(vocab, 48, generator=generator) * 0.2).requires_grad_(True)
    targets = torch.randint(0, vocab, (37,), generator=generator)
    targets[:3] = torch.tensor([0, vocab - 1, SLICE])  # the first word, the last, the first of a later slice
    upstream = torch.rand(37, generator=generator)  # a weighted sum, so each row's gradient is scaled its own way

    losses = head_cross_entropy(hidden, weight, targets)
    (losses * upstream).sum().backward()
    hidden64 = hidden.detach().double().requires_grad_(True)
    weight64 = weight.detach().double().requires_grad_(True)
    reference = torch.nn.functional.cross_entropy(hidden64 @ weight64.T, targets, reduction="none")
    (reference * upstream.double()).sum().backward()

    assert losses.dtype == torch.float32 and losses.shape == (37,)
    assert torch.allclose(losses.double(), reference.detach(), rtol=1e-6, atol=1e-5)
    assert torch.allclose(hidden.grad.double(), hidden64.grad, rtol=1e-4, atol=1e-6)
    assert torch.allclose(weight.grad.double(), weight64.grad, rtol=1e-4, atol=1e-6)
    assert reference.detach().std() > 1.0  # the rows' losses differ: a wrong target column would show


def test_frozen_output_layer_gets_no_gradient():
    hidden = torch.randn(5, 16, requires_grad=True)
    weight = torch.randn(SLICE + 3, 16)
    head_cross_entropy(hidden, weight, torch.tensor([1, 2, 3, SLICE, SLICE + 2])).sum().backward()
    assert weight.grad is None and hidden.grad is not None and hidden.grad.abs().sum() > 0
