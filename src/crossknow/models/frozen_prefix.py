"""Reuse of frozen lower blocks across the checkpoints of a sweep, which `--train-layers last:N` keeps bit-identical.

`FrozenPrefix` hooks a causal LM's decoder: a call not seen before runs whole and keeps the last frozen block's
output; a call seen before (its key: ids, mask, positions, cache length, context call) runs only the trained blocks
on the kept states. An unseen continuation of a replayed context raises `PrefixCacheMiss` (the caller scores again
without reuse). Callers check that the frozen weights are the same (`crossknow.models.checkpoint_switch`).
"""

from __future__ import annotations

import hashlib
from typing import Any

import torch

from crossknow.errors import PrefixCacheMiss

DEFAULT_BUDGET_BYTES = 4 << 30
"""Hidden states kept at most (4 GiB); past it, new calls run whole and are not kept."""


def _digest(*parts: Any) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for part in parts:
        if isinstance(part, torch.Tensor):
            digest.update(str((part.dtype, tuple(part.shape))).encode())
            digest.update(part.detach().contiguous().cpu().numpy().tobytes())
        else:
            digest.update(repr(part).encode())
    return digest.hexdigest()


class _Replay(torch.nn.Module):
    """Stands in for frozen block `layer_idx`: the first returns the kept hidden states, every one
    appends placeholder keys and values of the right length to its slot of the KV cache."""

    def __init__(self, owner: FrozenPrefix, layer_idx: int, first: bool):
        super().__init__()
        self.owner, self.layer_idx, self.first = owner, layer_idx, first

    def forward(self, hidden_states: torch.Tensor, *args: Any, cache: Any = None, **kwargs: Any):
        if cache is not None:
            batch, length = hidden_states.shape[0], hidden_states.shape[1]
            shape = (batch, self.owner.kv_heads, length, self.owner.head_dim)
            placeholder = torch.zeros(shape, dtype=hidden_states.dtype, device=hidden_states.device)
            cache.update(placeholder, placeholder, self.layer_idx)
        if self.first:
            return self.owner.replayed.to(hidden_states.device)
        return hidden_states


class FrozenPrefix:
    """Keeps the output of the first `n_frozen` blocks of `model`'s decoder per distinct call, and replays it."""

    def __init__(self, model: Any, n_frozen: int, budget_bytes: int = DEFAULT_BUDGET_BYTES):
        self.decoder = model.get_decoder()
        self.layers = self.decoder.layers
        if not 1 <= n_frozen < len(self.layers):
            raise ValueError(f"n_frozen must be between 1 and {len(self.layers) - 1}, got {n_frozen}")
        config = model.config
        self.n_frozen = n_frozen
        self.kv_heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        self.budget_bytes = budget_bytes
        self.kept: dict[str, torch.Tensor] = {}
        self.kept_bytes = 0
        self.hits = 0
        self.misses = 0
        self.replayed: torch.Tensor | None = None
        self._real = [self.layers[i] for i in range(n_frozen)]
        self._stand_ins = [_Replay(self, i, i == 0) for i in range(n_frozen)]
        self._context: tuple[str, bool] | None = None  # (key, replayed) of the last context call
        self._capture_key: str | None = None
        self._hooks = [
            self.decoder.register_forward_pre_hook(self._before, with_kwargs=True),
            self.decoder.register_forward_hook(self._after),
            self._real[-1].register_forward_hook(self._capture),
        ]

    def remove(self) -> None:
        """Take the hooks off the model and forget every kept state."""
        self._restore()
        for hook in self._hooks:
            hook.remove()
        self.kept.clear()
        self.kept_bytes = 0

    def _before(self, module: Any, args: tuple, kwargs: dict) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is None:  # called with embeddings: nothing to key on, run whole
            self._capture_key = None
            return
        past = kwargs.get("cache")
        past_length = past.get_seq_length() if past is not None else 0
        context = self._context if past_length else None
        key = _digest(ids, kwargs.get("attention_mask"), kwargs.get("position_ids"), past_length,
                      context[0] if context else None)
        replay = key in self.kept
        if context and context[1] and not replay:
            raise PrefixCacheMiss("a continuation of a replayed context was never seen; score again without reuse")
        if not past_length:
            self._context = (key, replay)
        if replay:
            self.hits += 1
            self.replayed = self.kept[key]
            for i, stand_in in enumerate(self._stand_ins):
                self.layers[i] = stand_in
            self._capture_key = None
        else:
            self.misses += 1
            self._capture_key = key

    def _capture(self, module: Any, args: tuple, output: Any) -> None:
        if self._capture_key is None:
            return
        hidden = output[0] if isinstance(output, tuple) else output
        size = hidden.numel() * hidden.element_size()
        if self.kept_bytes + size <= self.budget_bytes:
            self.kept[self._capture_key] = hidden.detach().clone()
            self.kept_bytes += size

    def _after(self, module: Any, args: tuple, output: Any) -> None:
        self._restore()
        self._capture_key = None

    def _restore(self) -> None:
        for i, real in enumerate(self._real):
            self.layers[i] = real
        self.replayed = None
