"""FLOP accounting for scoring multiple-choice items with a decoder-only transformer.

Counted: matrix-multiply FLOPs (2 per multiply-add). Norms, activations, rotary embeddings, the
softmax and the log-softmax are elementwise and left out (a few percent for a small model).

For one token through the body (all decoder layers):
    body = 2 * layers * (hidden*(heads*head_dim)          q projection
                         + 2 * hidden*(kv_heads*head_dim)  k and v projections
                         + (heads*head_dim)*hidden         o projection
                         + 3 * hidden*intermediate)        gated MLP: gate, up, down
For one token at 0-based position p, attending causally (a sliding-window layer sees at most its
window):
    attention = sum over layers of 4 * heads * head_dim * min(p + 1, window of the layer)
                (2 for the query-key scores, 2 for the weighted sum of values)
For one position projected to the vocabulary:
    projection = 2 * hidden * vocab

The necessary work of an item (the floor; what crossknow needs), with ctx = its context tokens and
cont_i = the continuation tokens of option i (lm-eval's tokenisation rule, shared by both tools):
    body and attention over the context once, at positions 0 .. |ctx|-1, and over each option's
    continuation tokens but its last (a last token is only a target, never an input), at positions
    |ctx| .. |ctx| + |cont_i| - 2; the projection at the |cont_i| scored positions of each option.

lm-evaluation-harness's work (its HF backend, `HFLM._loglikelihood_tokens`, read in lm-eval 0.4):
every request is the sequence ctx + cont_i without its last token, computed on its own (no
context is shared between the options of an item; requests that are equal but for their last
token are computed once, its `logits_cache` grouping); requests are sorted longest first and cut
into batches of `batch_size`, each padded on the right to its longest row, and the whole padded
batch goes through the body and the vocabulary projection at every position (the model returns
logits for all positions; the log-softmax is taken over all of them).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ModelShapes:
    """The shapes of a decoder-only transformer that decide its FLOPs."""

    hidden: int
    """Width of the residual stream."""
    layers: int
    """Number of decoder layers."""
    heads: int
    """Query heads per layer."""
    kv_heads: int
    """Key/value heads per layer."""
    head_dim: int
    """Width of one head."""
    intermediate: int
    """Width of the gated MLP."""
    vocab: int
    """Vocabulary size (rows of the output projection)."""
    windows: tuple[int | None, ...]
    """Per layer, the sliding attention window, or None for full attention."""

    @classmethod
    def from_model_dir(cls, model_dir: str | Path) -> ModelShapes:
        """Read the shapes from a checkpoint's config.json (the text config of a multimodal one)."""
        config = json.loads((Path(model_dir) / "config.json").read_text(encoding="utf-8"))
        config = config.get("text_config", config)
        heads = config["num_attention_heads"]
        layers = config["num_hidden_layers"]
        window = config.get("sliding_window")
        layer_types = config.get("layer_types") or ["full_attention"] * layers
        windows = tuple(window if kind == "sliding_attention" else None for kind in layer_types)
        return cls(
            hidden=config["hidden_size"],
            layers=layers,
            heads=heads,
            kv_heads=config.get("num_key_value_heads", heads),
            head_dim=config.get("head_dim") or config["hidden_size"] // heads,
            intermediate=config["intermediate_size"],
            vocab=config["vocab_size"],
            windows=windows,
        )

    def layer_weight_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) of every matrix one decoder layer multiplies each token by."""
        attention_width, kv_width = self.heads * self.head_dim, self.kv_heads * self.head_dim
        return {
            "q_proj": (self.hidden, attention_width),
            "k_proj": (self.hidden, kv_width),
            "v_proj": (self.hidden, kv_width),
            "o_proj": (attention_width, self.hidden),
            "gate_proj": (self.hidden, self.intermediate),
            "up_proj": (self.hidden, self.intermediate),
            "down_proj": (self.intermediate, self.hidden),
        }

    def body_params_per_token(self) -> int:
        """Weights of all layers' matrices that each token is multiplied by (embeddings excluded)."""
        return self.layers * sum(rows * cols for rows, cols in self.layer_weight_shapes().values())

    def body_flops_per_token(self) -> int:
        """Matmul FLOPs of one token through the body, attention scores excluded."""
        return 2 * self.body_params_per_token()

    def attention_flops(self, position: int) -> int:
        """Attention score and value FLOPs of the token at 0-based `position`, over all layers."""
        per_key = 4 * self.heads * self.head_dim
        return sum(per_key * (position + 1 if window is None else min(position + 1, window)) for window in self.windows)

    def projection_flops_per_position(self) -> int:
        """FLOPs of projecting one position onto the vocabulary."""
        return 2 * self.hidden * self.vocab


@dataclass(frozen=True)
class ItemTokens:
    """One item's token ids under the shared tokenisation rule."""

    context: tuple[int, ...]
    """The context's tokens (BOS included)."""
    continuations: tuple[tuple[int, ...], ...]
    """Each option's continuation tokens."""


@dataclass
class Work:
    """FLOPs of a scoring job, by kind, and the positions behind them."""

    body_tokens: int = 0
    """Token positions run through the body."""
    projected_positions: int = 0
    """Positions projected onto the vocabulary."""
    body_flops: int = 0
    """Matmul FLOPs of the body's weight matrices."""
    attention_flops: int = 0
    """Query-key and value FLOPs of attention."""
    projection_flops: int = 0
    """FLOPs of the vocabulary projection."""

    @property
    def total(self) -> int:
        """All counted FLOPs."""
        return self.body_flops + self.attention_flops + self.projection_flops

    def add_run(self, shapes: ModelShapes, positions: Iterable[int], projected: int) -> None:
        """Count tokens at `positions` through the body and `projected` positions onto the vocabulary."""
        positions = list(positions)
        self.body_tokens += len(positions)
        self.body_flops += len(positions) * shapes.body_flops_per_token()
        self.attention_flops += sum(shapes.attention_flops(position) for position in positions)
        self.projected_positions += projected
        self.projection_flops += projected * shapes.projection_flops_per_position()


def necessary_work(shapes: ModelShapes, items: Sequence[ItemTokens]) -> Work:
    """The floor: each item's context once, each option's continuation inputs, projection at scored positions."""
    work = Work()
    for item in items:
        context_length = len(item.context)
        work.add_run(shapes, range(context_length), projected=0)
        for continuation in item.continuations:
            inputs = range(context_length, context_length + len(continuation) - 1)
            work.add_run(shapes, inputs, projected=len(continuation))
    return work


def lm_eval_work(shapes: ModelShapes, items: Sequence[ItemTokens], batch_size: int) -> Work:
    """lm-evaluation-harness HF backend's work: one padded row per distinct request, logits everywhere."""
    rows: dict[tuple[int, ...], tuple[int, ...]] = {}
    for item in items:
        for continuation in item.continuations:
            sequence = item.context + continuation
            rows.setdefault(sequence[:-1], sequence)
    ordered = sorted(rows.values(), key=lambda sequence: (-len(sequence), sequence))
    work = Work()
    for start in range(0, len(ordered), batch_size):
        batch = ordered[start:start + batch_size]
        padded = max(len(sequence) - 1 for sequence in batch)
        for _ in batch:
            work.add_run(shapes, range(padded), projected=padded)
    return work


def item_tokens(encode, requests: Sequence[tuple[str, str]]) -> ItemTokens:
    """Tokens of one item's (context, continuation) requests: ctx = encode(context), continuation =
    encode(context + continuation)[len(ctx):]; every request of an item must share its context."""
    contexts = {context for context, _ in requests}
    if len(contexts) != 1:
        raise ValueError(f"the options of an item must share one context, got {len(contexts)}")
    context = contexts.pop()
    ctx = tuple(encode(context))
    continuations = tuple(tuple(encode(context + continuation)[len(ctx):]) for _, continuation in requests)
    return ItemTokens(ctx, continuations)
