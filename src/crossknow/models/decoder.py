"""crossknow's narrow view of a causal LM, the one its fast paths use: shared-context scoring (`hf_scorer`), the
frozen-block replay (`frozen_prefix`) and checkpoint switching (`checkpoint_switch`).

Two implementations: `TransformersDecoder`, over any transformers causal LM, is the one place that knows
transformers' decoder keywords, cache methods and block calling convention; crossknow's own Gemma 3
(`gemma3_text.Gemma3Decoder`) implements the interface natively. `decoder_of` picks the one for a model.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Protocol

import torch
from torch import nn

from crossknow.models.placement import execution_device


class Watcher(Protocol):
    """Told of every call of a decoder's `run` (the frozen-block replay is one)."""

    def before(self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, past: int) -> None:
        """Before a call on `ids` after `past` cached positions."""

    def after(self) -> None:
        """After that call, whether it returned or raised."""


class Decoder(ABC):
    """A causal LM as the fast paths see it: its blocks, its parameter names, a run over a KV cache."""

    model: nn.Module
    """The whole causal LM: its parameters are the checkpoint's, by the checkpoint's names."""
    config: Any
    """Its configuration (the logit transform is read from it: `logit_head.logit_scaling`)."""
    body: nn.Module
    """Embeddings, blocks and final norm: what `run` calls."""
    head: nn.Module
    """The output layer (`weight`, and `bias` where it has one)."""
    vocab_size: int
    """Rows of the input embedding table."""
    max_positions: int | None
    """The most positions it was built for, where its configuration says."""
    blocks: nn.ModuleList
    """The decoder blocks, in order; the frozen-block replay swaps stand-ins in and out."""
    blocks_name: str
    """The name prefix of the blocks' parameters (`model.layers`)."""
    embedding_name: str
    """The name of the input embedding weight."""
    kv_heads: int
    head_dim: int

    watcher: Watcher | None = None

    def run(self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor,
            cache: Any = None) -> tuple[torch.Tensor, Any]:
        """The final-normed hidden states of `ids` (batch, positions) after the positions `cache` holds (none when
        None), and the cache holding theirs too. `mask` covers the cached and the new positions: 1 for a token,
        0 for padding."""
        if self.watcher is None:
            return self._run(ids, mask, positions, cache)
        self.watcher.before(ids, mask, positions, 0 if cache is None else self.cache_length(cache))
        try:
            return self._run(ids, mask, positions, cache)
        finally:
            self.watcher.after()

    def copy(self, cache: Any) -> Any:
        """An independent copy of `cache`."""
        return copy.deepcopy(cache)

    @abstractmethod
    def _run(self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor,
             cache: Any) -> tuple[torch.Tensor, Any]:
        """`run` itself."""

    @abstractmethod
    def select(self, cache: Any, rows: torch.Tensor) -> None:
        """Keep the batch rows `rows` of `cache` (in that order, repeats allowed), in place."""

    @abstractmethod
    def cache_length(self, cache: Any) -> int:
        """How many positions `cache` holds."""

    @abstractmethod
    def stand_in(self, index: int, output: Callable[[torch.Tensor], torch.Tensor]) -> nn.Module:
        """A module that takes block `index`'s place in the decoder's loop: it appends keys and values of the
        right length (zeros) to the cache's slot `index` and returns `output(the hidden states it got)`."""

    @abstractmethod
    def identity(self) -> str:
        """The model's class and configuration, for the record of a passed head check."""

    def input_device(self) -> str:
        """Where the model takes its token ids: where its input embedding computes (crossknow.models.placement)."""
        return execution_device(self.model.get_submodule(self.embedding_name.removesuffix(".weight")))


def _names(model: nn.Module, blocks: nn.Module, embedding: nn.Module) -> tuple[str, str]:
    names = {id(module): name for name, module in model.named_modules()}
    return names[id(blocks)], names[id(embedding)] + ".weight"


class StandIn(nn.Module):
    """What every stand-in block does (`Decoder.stand_in`); a subclass takes the decoder's calling convention and
    passes its cache's append."""

    def __init__(self, decoder: Decoder, index: int, output: Callable[[torch.Tensor], torch.Tensor]):
        super().__init__()
        self.shape, self.index, self.output = (decoder.kv_heads, decoder.head_dim), index, output

    def replay(self, hidden_states: torch.Tensor, append: Callable[..., Any] | None) -> torch.Tensor:
        """Zeros of the right length appended through `append(keys, values, index)` (none without a cache), and
        `output(hidden_states)`."""
        if append is not None:
            batch, length = hidden_states.shape[:2]
            zeros = hidden_states.new_zeros((batch, self.shape[0], length, self.shape[1]))
            append(zeros, zeros, self.index)
        return self.output(hidden_states)


class _TransformersStandIn(StandIn):
    """A stand-in block in transformers' calling convention: hidden states first, the cache as `cache=`."""

    def forward(self, hidden_states: torch.Tensor, *args: Any, cache: Any = None, **kwargs: Any) -> torch.Tensor:
        return self.replay(hidden_states, None if cache is None else cache.update)


class TransformersDecoder(Decoder):
    """Any transformers causal LM (transformers 5.24 or later: the decoder's `cache=` keyword and output field)."""

    def __init__(self, model: Any):
        self.model, self.config = model, model.config
        self.body, self.head = model.get_decoder(), model.get_output_embeddings()
        self.blocks = self.body.layers
        embedding = model.get_input_embeddings()
        self.blocks_name, self.embedding_name = _names(model, self.blocks, embedding)
        config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
        self.vocab_size, self.max_positions = embedding.num_embeddings, getattr(config, "max_position_embeddings", None)
        self.kv_heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads

    def _run(self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor,
             cache: Any) -> tuple[torch.Tensor, Any]:
        out = self.body(input_ids=ids, attention_mask=mask, position_ids=positions, cache=cache, use_cache=True)
        return out.last_hidden_state.to(ids.device), out.cache  # a device map may end the blocks elsewhere

    def select(self, cache: Any, rows: torch.Tensor) -> None:
        cache.reorder_cache(rows)

    def cache_length(self, cache: Any) -> int:
        return cache.get_seq_length()

    def stand_in(self, index: int, output: Callable[[torch.Tensor], torch.Tensor]) -> nn.Module:
        return _TransformersStandIn(self, index, output)

    def identity(self) -> str:
        model = self.model
        configuration = model.config.to_json_string(use_diff=False)
        return "\n".join([type(model).__module__, type(model).__qualname__, configuration])


def decoder_of(model: Any) -> Decoder:
    """The decoder view of `model`: crossknow's Gemma 3 its own, any other through transformers."""
    own = getattr(model, "decoder_view", None)
    return own() if own is not None else TransformersDecoder(model)
