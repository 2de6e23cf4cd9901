"""Which parameters train: all, the decoder blocks only, or the last N blocks."""

from __future__ import annotations

import re
from typing import Any

from crossknow.errors import CrossknowError

LAYER_SPEC = re.compile(r"^(all|blocks|last:(\d+))$")


def check_layer_spec(spec: str) -> str:
    """`spec` when it is all, blocks or last:N with N >= 1, else a ValueError (for config validators: the
    block count is checked against the model by `select_trainable`)."""
    match = LAYER_SPEC.match(spec)
    if not match or (match.group(2) is not None and int(match.group(2)) < 1):
        raise ValueError(f"{spec!r}: use all, blocks, or last:N with N >= 1")
    return spec


def _decoder(model: Any) -> Any:
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
    if decoder is None or not hasattr(decoder, "layers"):
        raise CrossknowError(f"{type(model).__name__}: cannot find the decoder blocks; use --train-layers all")
    return decoder


def select_trainable(model: Any, spec: str) -> tuple[int, int]:
    """Freeze every parameter outside `spec`; return (trainable, total) parameter counts.

    'all' trains everything; 'blocks' the decoder blocks and the final norm (input embeddings and a
    tied or untied output head stay frozen); 'last:N' the last N decoder blocks and the final norm.
    """
    match = LAYER_SPEC.match(spec)
    if not match:
        raise CrossknowError(f"--train-layers {spec!r}: use all, blocks, or last:N")
    if spec != "all":
        decoder = _decoder(model)
        blocks = list(decoder.layers)
        count = len(blocks) if spec == "blocks" else int(match.group(2))
        if not 1 <= count <= len(blocks):
            raise CrossknowError(f"--train-layers {spec}: the model has {len(blocks)} decoder blocks")
        for parameter in model.parameters():
            parameter.requires_grad_(False)
        trainable = blocks[len(blocks) - count :] + ([decoder.norm] if hasattr(decoder, "norm") else [])
        for module in trainable:
            for parameter in module.parameters():
                parameter.requires_grad_(True)
    total = sum(p.numel() for p in model.parameters())
    return sum(p.numel() for p in model.parameters() if p.requires_grad), total
