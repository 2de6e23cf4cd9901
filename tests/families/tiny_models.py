"""Tiny random models of other families on their real tokenizers (tests/families/vocab.py), as `hf:DIR` loads them.

Each is the family's own transformers architecture (Llama for Llama 3 and Llama 2, Qwen2, Phi-3) with every
embedding row of its tokenizer, grouped-query attention and an untied output head, 3 blocks of width 64, drawn with
a fixed seed and a wide initialisation so that options' log-probabilities differ by more than float32 noise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.families.vocab import FAMILIES, tokenizer_dir

ARCHITECTURES = {"llama3": "llama", "llama2": "llama", "qwen2": "qwen2", "phi3": "phi3"}
"""Family -> transformers' model type of its checkpoints."""

SHAPE: dict[str, Any] = {
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 4,
    "num_key_value_heads": 2, "max_position_embeddings": 4096, "initializer_range": 0.2, "tie_word_embeddings": False,
}
"""Config fields shared by every family's tiny model."""


def write_family_model(family: str, path: Path, seed: int = 0) -> Path:
    """Save `family`'s tokenizer and a random model of its architecture into `path` (created); return it."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    assert family in FAMILIES, family
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir(family))
    special = {name: getattr(tokenizer, name) for name in ("bos_token_id", "eos_token_id", "pad_token_id")}
    config = AutoConfig.for_model(ARCHITECTURES[family], vocab_size=len(tokenizer), **SHAPE, **special)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
