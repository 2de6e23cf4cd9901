"""Gemma 3's text model in plain torch, for scoring: transformers' `Gemma3ForCausalLM` numbers without importing
transformers' model code and what it pulls in (docs/speed.md, "Start-up"; docs/architecture.md).

`load_scoring_model` uses it for Gemma 3 text checkpoints (`unsupported` says which); it keeps the checkpoint's
parameter names, and the fast paths reach it through crossknow's decoder interface (`Gemma3Decoder`,
`crossknow.models.decoder`). crossknow's choices: the sliding-window cache keeps every position, masked, and a
padding query attends to itself alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import nn
from torch.nn import functional

from crossknow.models.decoder import Decoder, StandIn

ROPE_TYPES = ("default", "linear")
"""Rotary position types this module computes (others load through transformers)."""


@dataclass(frozen=True)
class Gemma3TextConfig:
    """The fields of a Gemma 3 text checkpoint's config.json that the forward uses, with their names there."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float
    query_pre_attn_scalar: float
    sliding_window: int
    layer_types: tuple[str, ...]
    rope_parameters: dict[str, dict[str, Any]] = field(hash=False)
    max_position_embeddings: int
    tie_word_embeddings: bool = True
    final_logit_softcapping: float | None = None
    model_type: str = "gemma3_text"

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Gemma3TextConfig:
        """The config from config.json's mapping (fields it lacks take the defaults above); ValueError when
        it lacks a field without a default or its layer_types do not name every layer."""
        fields = cls.__dataclass_fields__.values()
        lacking = [f.name for f in fields if f.default is MISSING and f.name not in raw]
        if lacking:
            raise ValueError(f"config.json lacks {', '.join(lacking)}")
        values = {f.name: raw[f.name] for f in fields if f.name in raw}
        values["layer_types"] = tuple(values["layer_types"])
        if len(values["layer_types"]) != values.get("num_hidden_layers"):
            raise ValueError(f"{len(values['layer_types'])} layer_types for {values.get('num_hidden_layers')} layers")
        return cls(**values)



def unsupported(directory: str | Path) -> str | None:
    """Why the checkpoint in `directory` is not one this module computes exactly, or None when it is."""
    directory = Path(directory)
    try:
        raw = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return f"no readable config.json ({error})"
    return "no weights in safetensors files" if not _weight_files(directory) else config_problem(raw)


def config_problem(raw: dict[str, Any]) -> str | None:
    """Why a model of config.json's mapping `raw` is not one this module computes exactly, or None when it is."""
    rope = raw.get("rope_parameters")
    checks = {
        "not a Gemma 3 text model": raw.get("model_type") != "gemma3_text"
        or (raw.get("architectures") or ["Gemma3ForCausalLM"]) != ["Gemma3ForCausalLM"],
        "quantised": "quantization_config" in raw,
        "no layer_types or rope_parameters (an older config format)": not raw.get("layer_types")
        or not isinstance(rope, dict),
        "a rotary position type other than default and linear": isinstance(rope, dict)
        and any((rope.get(kind) or {}).get("rope_type", "default") not in ROPE_TYPES
                for kind in set(raw.get("layer_types") or ())),
        "attention logits soft-capped": raw.get("attn_logit_softcapping") is not None,
        "bidirectional attention": bool(raw.get("use_bidirectional_attention")),
        "attention biases": bool(raw.get("attention_bias")),
        "an activation other than gelu_pytorch_tanh": raw.get("hidden_activation", "gelu_pytorch_tanh")
        != "gelu_pytorch_tanh",
    }
    return next((reason for reason, failed in checks.items() if failed), None)


class KVCache:
    """Keys and values of every block, each (batch, key/value heads, positions, head size)."""

    def __init__(self, n_layers: int):
        self.layers: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * n_layers

    def append(self, key: torch.Tensor, value: torch.Tensor, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Append `key` and `value` to block `layer`'s and return all of its keys and values."""
        held = self.layers[layer]
        if held is not None:
            key, value = torch.cat([held[0], key], dim=2), torch.cat([held[1], value], dim=2)
        self.layers[layer] = (key, value)
        return key, value

    def length(self) -> int:
        """How many positions the cache holds."""
        held = self.layers[0]
        return 0 if held is None else held[0].shape[2]

    def keep(self, rows: torch.Tensor) -> None:
        """Keep the batch rows `rows` (in that order, repeats allowed)."""
        self.layers = [None if held is None else (held[0][rows], held[1][rows]) for held in self.layers]


class LMOutput(NamedTuple):
    """What the whole model returns: logits over the vocabulary at every position."""

    logits: torch.Tensor


def _unloaded(*shape: int) -> nn.Parameter:
    """A parameter of `shape` on the meta device, replaced by `load` (nothing is allocated or initialised)."""
    return nn.Parameter(torch.empty(shape, device="meta"))


class Linear(nn.Module):
    """x @ weight.T, without a bias (nn.Linear would initialise weights that `load` replaces)."""

    def __init__(self, inputs: int, outputs: int):
        super().__init__()
        self.weight = _unloaded(outputs, inputs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return functional.linear(x, self.weight)


class Embedding(nn.Module):
    """The token embedding table (rows looked up, not scaled: the decoder scales them)."""

    def __init__(self, rows: int, size: int):
        super().__init__()
        self.num_embeddings = rows
        self.weight = _unloaded(rows, size)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return functional.embedding(ids, self.weight)


class RMSNorm(nn.Module):
    """Gemma's RMS norm: x / rms(x) * (1 + weight), computed in float32, returned in x's dtype."""

    def __init__(self, size: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = _unloaded(size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.float()
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * (1.0 + self.weight.float())).type_as(x)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


class Attention(nn.Module):
    """Self-attention of one block, with grouped key/value heads and RMS-normed queries and keys."""

    def __init__(self, config: Gemma3TextConfig, layer_idx: int):
        super().__init__()
        heads, kv_heads, size = config.num_attention_heads, config.num_key_value_heads, config.head_dim
        self.layer_idx, self.heads, self.kv_heads, self.head_dim = layer_idx, heads, kv_heads, size
        self.scale = config.query_pre_attn_scalar**-0.5
        self.q_proj = Linear(config.hidden_size, heads * size)
        self.k_proj = Linear(config.hidden_size, kv_heads * size)
        self.v_proj = Linear(config.hidden_size, kv_heads * size)
        self.o_proj = Linear(heads * size, config.hidden_size)
        self.q_norm = RMSNorm(size, config.rms_norm_eps)
        self.k_norm = RMSNorm(size, config.rms_norm_eps)

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor], mask: torch.Tensor,
                cache: KVCache | None) -> torch.Tensor:
        batch, length, _ = x.shape
        query = self.q_norm(self.q_proj(x).view(batch, length, self.heads, self.head_dim).transpose(1, 2))
        key = self.k_norm(self.k_proj(x).view(batch, length, self.kv_heads, self.head_dim).transpose(1, 2))
        value = self.v_proj(x).view(batch, length, self.kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = rope[0][:, None], rope[1][:, None]
        query = query * cos + _rotate_half(query) * sin
        key = key * cos + _rotate_half(key) * sin
        if cache is not None:
            key, value = cache.append(key, value, self.layer_idx)
        out = functional.scaled_dot_product_attention(
            query, key, value, attn_mask=mask, scale=self.scale, enable_gqa=self.heads != self.kv_heads
        )
        return self.o_proj(out.transpose(1, 2).reshape(batch, length, -1))


class FeedForward(nn.Module):
    """GeGLU: down(gelu_tanh(gate(x)) * up(x))."""

    def __init__(self, config: Gemma3TextConfig):
        super().__init__()
        self.gate_proj = Linear(config.hidden_size, config.intermediate_size)
        self.up_proj = Linear(config.hidden_size, config.intermediate_size)
        self.down_proj = Linear(config.intermediate_size, config.hidden_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(functional.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


class Block(nn.Module):
    """One decoder block: attention and feed-forward, each between a pre-norm and a post-norm."""

    def __init__(self, config: Gemma3TextConfig, layer_idx: int):
        super().__init__()
        self.self_attn = Attention(config, layer_idx)
        self.mlp = FeedForward(config)
        eps = config.rms_norm_eps
        self.input_layernorm = RMSNorm(config.hidden_size, eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, eps)
        self.pre_feedforward_layernorm = RMSNorm(config.hidden_size, eps)
        self.post_feedforward_layernorm = RMSNorm(config.hidden_size, eps)

    def forward(self, hidden_states: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor], mask: torch.Tensor,
                cache: KVCache | None = None) -> torch.Tensor:
        attended = self.self_attn(self.input_layernorm(hidden_states), rope, mask, cache)
        hidden_states = hidden_states + self.post_attention_layernorm(attended)
        fed = self.mlp(self.pre_feedforward_layernorm(hidden_states))
        return hidden_states + self.post_feedforward_layernorm(fed)


def _inverse_frequencies(config: Gemma3TextConfig, kind: str) -> torch.Tensor:
    """Rotary frequencies of the blocks of type `kind`, in float32 on the CPU."""
    rope, dim = config.rope_parameters[kind], config.head_dim
    inverse = 1.0 / (rope["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.float, device="cpu") / dim))
    return inverse / rope["factor"] if rope.get("rope_type", "default") == "linear" else inverse


class Body(nn.Module):
    """Embeddings, blocks and the final norm: token ids to the hidden states the output head reads."""

    def __init__(self, config: Gemma3TextConfig):
        super().__init__()
        self.config = config
        self.embed_tokens = Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(Block(config, i) for i in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        for kind in set(config.layer_types):
            self.register_buffer(f"{kind}_inv_freq", _inverse_frequencies(config, kind), persistent=False)

    def _rope(self, kind: str, positions: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        angles = positions[..., None].float() * getattr(self, f"{kind}_inv_freq")
        angles = torch.cat((angles, angles), dim=-1)
        return angles.cos().to(dtype), angles.sin().to(dtype)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                position_ids: torch.Tensor | None = None, cache: KVCache | None = None) -> torch.Tensor:
        """Hidden states of `input_ids` (batch, positions) after the positions `cache` holds (appended to it).

        `attention_mask` (batch, cached + new positions) is 1 where a key is a token, 0 where it is
        padding; `position_ids` default to the positions after the cache's."""
        past = cache.length() if cache is not None else 0
        batch, length = input_ids.shape
        device = input_ids.device
        if attention_mask is None:
            attention_mask = torch.ones((batch, past + length), dtype=torch.long, device=device)
        if position_ids is None:
            position_ids = torch.arange(past, past + length, device=device)[None].expand(batch, -1)
        weight = self.embed_tokens.weight
        hidden = self.embed_tokens(input_ids) * torch.tensor(self.config.hidden_size**0.5, dtype=weight.dtype)
        query_at = torch.arange(past, past + length, device=device)[:, None]
        distance = query_at - torch.arange(past + length, device=device)[None, :]
        keys = attention_mask[:, None, None, :].bool()
        own = distance == 0  # a padding query attends to itself: no empty row
        full = (keys & (distance >= 0)) | own
        sliding = full & (distance < self.config.sliding_window) | own
        kinds = {kind: self._rope(kind, position_ids, hidden.dtype) for kind in set(self.config.layer_types)}
        for index, layer in enumerate(self.layers):
            kind = self.config.layer_types[index]
            hidden = layer(hidden, kinds[kind], sliding if kind == "sliding_attention" else full, cache=cache)
        return self.norm(hidden)


class Gemma3TextModel(nn.Module):
    """The body and its output head, named as the checkpoint names them."""

    def __init__(self, config: Gemma3TextConfig):
        super().__init__()
        self.config = config
        self.model = Body(config)
        self.lm_head = Linear(config.hidden_size, config.vocab_size)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def decoder_view(self) -> Gemma3Decoder:
        """The model as crossknow's fast paths use it (`crossknow.models.decoder.decoder_of`)."""
        return Gemma3Decoder(self)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **kwargs: Any) -> LMOutput:
        """Logits at every position (the model's own, soft-capped where the config says)."""
        hidden = self.model(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        logits = self.lm_head(hidden)
        cap = self.config.final_logit_softcapping
        return LMOutput(torch.tanh(logits / cap) * cap if cap else logits)


class _StandIn(StandIn):
    """A stand-in block in `Body`'s loop: hidden states, rotary angles, mask, cache."""

    def forward(self, hidden_states: torch.Tensor, rope: Any, mask: Any, cache: KVCache | None = None) -> torch.Tensor:
        return self.replay(hidden_states, None if cache is None else cache.append)


class Gemma3Decoder(Decoder):
    """`Gemma3TextModel` through crossknow's decoder interface."""

    def __init__(self, model: Gemma3TextModel):
        config = model.config
        self.model, self.config, self.body, self.head = model, config, model.model, model.lm_head
        self.blocks = model.model.layers
        self.blocks_name, self.embedding_name = "model.layers", "model.embed_tokens.weight"
        self.vocab_size, self.max_positions = model.model.embed_tokens.num_embeddings, config.max_position_embeddings
        self.kv_heads, self.head_dim = config.num_key_value_heads, config.head_dim

    def _run(self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor,
             cache: KVCache | None) -> tuple[torch.Tensor, KVCache]:
        cache = cache if cache is not None else KVCache(len(self.blocks))
        return self.body(input_ids=ids, attention_mask=mask, position_ids=positions, cache=cache), cache

    def select(self, cache: KVCache, rows: torch.Tensor) -> None:
        cache.keep(rows)

    def cache_length(self, cache: KVCache) -> int:
        return cache.length()

    def stand_in(self, index: int, output: Callable[[torch.Tensor], torch.Tensor]) -> nn.Module:
        return _StandIn(self, index, output)

    def identity(self) -> str:
        return "\n".join([type(self.model).__module__, type(self.model).__qualname__,
                          json.dumps(self.config.__dict__, sort_keys=True)])


def _weight_files(directory: Path) -> list[Path]:
    """The checkpoint's safetensors files (transformers reads these before any PyTorch .bin files)."""
    return sorted(directory.glob("*.safetensors"))


def _mapped_tensors(path: Path) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file through safetensors' own reader, which maps the file privately:
    nothing is read before a tensor is touched, and a write stays in this process (tested)."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt", device="cpu") as handle:
        return {name: handle.get_tensor(name) for name in handle.keys()}  # noqa: SIM118 - not a mapping


def build(
    config: Gemma3TextConfig, tensors: dict[str, torch.Tensor], dtype: torch.dtype, device: str
) -> Gemma3TextModel:
    """The model of `config` with the weights `tensors` (named as in transformers' state dict; a tied head's
    may be absent) in `dtype` on `device`, in eval mode. Tensors already in `dtype` on `device` are used as
    they are, not copied."""
    model = Gemma3TextModel(config)
    if config.tie_word_embeddings:
        tensors = {name: value for name, value in tensors.items() if name != "lm_head.weight"}
    tensors = {name: value.to(device=device, dtype=dtype) for name, value in tensors.items()}
    result = model.load_state_dict(tensors, strict=False, assign=True)
    missing = set(result.missing_keys) - ({"lm_head.weight"} if config.tie_word_embeddings else set())
    if missing or result.unexpected_keys:
        raise ValueError(f"weights missing: {sorted(missing)[:5]}, unexpected: {result.unexpected_keys[:5]}")
    if config.tie_word_embeddings:
        model.lm_head.weight = model.model.embed_tokens.weight
    return model.to(device).eval()  # the rotary frequencies, made on the CPU


def computes(model: Any) -> bool:
    """Whether transformers' `model` is a Gemma 3 text model this module computes exactly."""
    return type(model).__name__ == "Gemma3ForCausalLM" and config_problem(model.config.to_dict()) is None


def from_transformers(model: Any) -> Gemma3TextModel:
    """transformers' `Gemma3ForCausalLM` `model` as this module's model, sharing its weights (not copied)."""
    config = Gemma3TextConfig.from_dict(model.config.to_dict())
    weight = model.get_input_embeddings().weight
    return build(config, dict(model.state_dict()), weight.dtype, str(weight.device))


def load(directory: str | Path, dtype: torch.dtype, device: str) -> Gemma3TextModel:
    """The checkpoint in `directory` (config.json, model.safetensors or its shards) in `dtype` on `device`,
    in eval mode. Weights already in `dtype` on the CPU stay mapped from the file (copy-on-write)."""
    directory = Path(directory)
    reason = unsupported(directory)
    if reason is not None:
        raise ValueError(f"{directory}: {reason}")
    try:
        config = Gemma3TextConfig.from_dict(json.loads((directory / "config.json").read_text(encoding="utf-8")))
        tensors: dict[str, torch.Tensor] = {}
        for path in _weight_files(directory):
            tensors.update(_mapped_tensors(path))
        return build(config, tensors, dtype, device)
    except ValueError as error:
        raise ValueError(f"{directory}: {error}") from error
