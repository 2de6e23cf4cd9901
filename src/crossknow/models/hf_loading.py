"""Loading a transformers causal LM and its tokenizer, shared by the local scorer and generator."""

from __future__ import annotations

from typing import Any

from crossknow.errors import CrossknowError, MissingDependencyError

try:
    import torch
    from transformers import AutoModelForCausalLM

    from crossknow.models.fast_tokenizer import load_tokenizer
except ImportError as _error:  # pragma: no cover - exercised only without the hf extra
    raise MissingDependencyError("torch and transformers", "hf", "Local models (default, hf:, gguf:)") from _error

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
"""Compute dtypes accepted by --dtype."""


def resolve_device(device: str) -> str:
    """'auto' -> 'cuda' when a CUDA device is present, else 'cpu'; any other value unchanged."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def load_causal_lm(path: str, revision: str | None, model_id: str, device: str, dtype: str) -> tuple[Any, Any]:
    """(tokenizer, model) of `path` at `revision`, the model in `dtype` on `device` in eval mode.

    An unknown dtype or a model that cannot be loaded is a CrossknowError naming `model_id`. The
    tokenizer takes the fast load where crossknow's cache checked it (`crossknow.models.fast_tokenizer`).
    """
    if dtype not in DTYPES:
        raise CrossknowError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    try:
        tokenizer = load_tokenizer(path, revision)
        model = AutoModelForCausalLM.from_pretrained(path, revision=revision, dtype=DTYPES[dtype])
    except OSError as error:
        raise CrossknowError(f"cannot load model {model_id!r}: {error}") from error
    return tokenizer, model.to(device).eval()
