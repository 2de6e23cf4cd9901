"""Reuse of frozen lower blocks across the checkpoints of a sweep, which `--train-layers last:N` keeps bit-identical.

`FrozenPrefix` watches a decoder's calls (`crossknow.models.decoder`): a call not seen before runs whole and keeps the
last frozen block's output; a call seen before (its key: ids, mask, positions, cache length, context call) runs only
the trained blocks on the kept states, the frozen ones standing in with placeholder keys and values. An unseen
continuation of a replayed context raises `PrefixCacheMiss` (the caller scores again without reuse). Callers check
that the frozen weights are the same (`crossknow.models.checkpoint_switch`).
"""

from __future__ import annotations

import hashlib
from typing import Any

import torch

from crossknow.errors import PrefixCacheMiss
from crossknow.models.decoder import Decoder

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


class FrozenPrefix:
    """Keeps the output of the first `n_frozen` blocks of `decoder` per distinct call of its `run`, and replays it."""

    def __init__(self, decoder: Decoder, n_frozen: int, budget_bytes: int = DEFAULT_BUDGET_BYTES):
        self.decoder = decoder
        self.layers = decoder.blocks
        if not 1 <= n_frozen < len(self.layers):
            raise ValueError(f"n_frozen must be between 1 and {len(self.layers) - 1}, got {n_frozen}")
        if decoder.watcher is not None:
            raise ValueError("the decoder already replays frozen blocks")
        self.n_frozen = n_frozen
        self.budget_bytes = budget_bytes
        self.kept: dict[str, torch.Tensor] = {}
        self.kept_bytes = 0
        self.hits = 0
        self.misses = 0
        self.replayed: torch.Tensor | None = None
        self._real = [self.layers[i] for i in range(n_frozen)]
        self._stand_ins = [decoder.stand_in(i, self._replayed if i == 0 else _unchanged) for i in range(n_frozen)]
        self._context: tuple[str, bool] | None = None  # (key, replayed) of the last context call
        self._capture_key: str | None = None
        self._hook = self._real[-1].register_forward_hook(self._capture)
        decoder.watcher = self

    def remove(self) -> None:
        """Stop watching the decoder and forget every kept state."""
        self._restore()
        self._hook.remove()
        self.decoder.watcher = None
        self.kept.clear()
        self.kept_bytes = 0

    def before(self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, past: int) -> None:
        """Replay the frozen blocks when this call was seen before, else keep their output."""
        context = self._context if past else None
        key = _digest(ids, mask, positions, past, context[0] if context else None)
        replay = key in self.kept
        if context and context[1] and not replay:
            raise PrefixCacheMiss("a continuation of a replayed context was never seen; score again without reuse")
        if not past:
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

    def after(self) -> None:
        """Put the real blocks back."""
        self._restore()
        self._capture_key = None

    def _replayed(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.replayed.to(hidden.device)

    def _capture(self, module: Any, args: tuple, output: Any) -> None:
        if self._capture_key is None:
            return
        hidden = output[0] if isinstance(output, tuple) else output
        size = hidden.numel() * hidden.element_size()
        if self.kept_bytes + size <= self.budget_bytes:
            self.kept[self._capture_key] = hidden.detach().clone()
            self.kept_bytes += size

    def _restore(self) -> None:
        for i, real in enumerate(self._real):
            self.layers[i] = real
        self.replayed = None


def _unchanged(hidden: torch.Tensor) -> torch.Tensor:
    return hidden
