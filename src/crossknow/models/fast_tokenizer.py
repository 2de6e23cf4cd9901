"""A faster load of the tokenizers that crossknow's cache holds, used only where it was checked to be the same.

`AutoTokenizer` in transformers 5 parses tokenizer.json in Python and rebuilds the tokenizer from its
vocabulary and merges (for Gemma 3: 262,144 words, 514,906 merges), about 2.5x the cost of the Rust
`tokenizers.Tokenizer.from_file`. `PreTrainedTokenizerFast(tokenizer_file=...)` with the special
tokens of the saved tokenizer_config.json takes the Rust path. A model class may build its tokenizer
otherwise than its tokenizer.json says, so the fast load is used only for a checkpoint directory
whose verdict file (written by `crossknow.models.checkpoint_cache`, under the transformers version
that made it) records that both loads give the same token ids, decoded text and special tokens on
`PROBES`. Directories without a current verdict (every user's `hf:` model) load with AutoTokenizer.
"""

from __future__ import annotations

import json
import os
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

VERDICT_FILE = "crossknow-tokenizer.json"
"""Name of the verdict file in a checkpoint directory."""
SPECIAL_TOKENS = ("bos_token", "eos_token", "unk_token", "pad_token", "mask_token")
"""Special tokens taken from tokenizer_config.json."""
PROBES = (
    "",
    " ",
    "Hello world",
    "The capital of France is",
    " Paris.\n\nQuestion: Which substance helps manage glycemic levels?\n",
    "a  b\t\tc   d\n\n\ne",
    "日本の首都は東京です。",
    "インスリンは血糖値を下げる。糖尿病の治療に用いられる。",
    "Mixed 日本語 and English, 123.45 and ½ and emoji 🙂.",
    "<bos>text<eos><pad><start_of_turn>user\nhi<end_of_turn>",
    "naïve café — “quotes” and ‘single’ … \u00a0nbsp \u200bzwsp",
    "def f(x):\n    return x ** 2  # code\n",
)
"""Texts on which the fast and the AutoTokenizer load must agree (the tests check hundreds more)."""


def load_fast_tokenizer(path: str | Path) -> Any:
    """The tokenizer of checkpoint `path` from its tokenizer.json through the Rust loader, with the
    special tokens of its tokenizer_config.json."""
    from transformers import PreTrainedTokenizerFast  # not AutoTokenizer: its import alone costs seconds

    path = Path(path)
    config = json.loads((path / "tokenizer_config.json").read_text(encoding="utf-8"))
    specials = {}
    for name in SPECIAL_TOKENS:
        value = config.get(name)
        if isinstance(value, dict):
            value = value.get("content")
        if value is not None:
            specials[name] = value
    return PreTrainedTokenizerFast(tokenizer_file=str(path / "tokenizer.json"), name_or_path=str(path), **specials)


def differences(fast: Any, reference: Any, texts: tuple[str, ...] | list[str]) -> list[str]:
    """Where `fast` and `reference` disagree: special token ids, and per text its ids and their decoding."""
    found = [
        f"{name}_id: {getattr(fast, name + '_id')} != {getattr(reference, name + '_id')}"
        for name in SPECIAL_TOKENS
        if getattr(fast, name + "_id") != getattr(reference, name + "_id")
    ]
    for text in texts:
        ids = fast(text).input_ids
        if ids != reference(text).input_ids:
            found.append(f"ids of {text[:40]!r}")
        elif fast.decode(ids) != reference.decode(ids):
            found.append(f"decoding of {text[:40]!r}")
    return found


def record_verdict(path: str | Path) -> bool:
    """Compare both loads of checkpoint `path` on PROBES, write the verdict file atomically, return it."""
    from transformers import AutoTokenizer

    path = Path(path)
    equal = (path / "tokenizer.json").is_file() and not differences(
        load_fast_tokenizer(path), AutoTokenizer.from_pretrained(path), PROBES
    )
    verdict = {"fast_tokenizer_equal": equal, "transformers": version("transformers")}
    with tempfile.NamedTemporaryFile("w", dir=path, prefix=".verdict-", delete=False, encoding="utf-8") as file:
        json.dump(verdict, file)
    os.replace(file.name, path / VERDICT_FILE)
    return equal


def has_current_verdict(path: str | Path) -> bool:
    """Whether checkpoint `path` holds a verdict made under the installed transformers."""
    try:
        verdict = json.loads((Path(path) / VERDICT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return verdict.get("transformers") == version("transformers")


def load_tokenizer(path: str, revision: str | None) -> Any:
    """The tokenizer of `path`: the fast load where a current verdict says it is the same, else AutoTokenizer."""
    if revision is None and has_current_verdict(path):
        verdict = json.loads((Path(path) / VERDICT_FILE).read_text(encoding="utf-8"))
        if verdict.get("fast_tokenizer_equal"):
            return load_fast_tokenizer(path)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, revision=revision)
