"""A faster load of the tokenizers in crossknow's cache, used only where it was checked to give the same tokens.

`PreTrainedTokenizerFast(tokenizer_file=...)` takes the Rust path that `AutoTokenizer` skips, and `ScoringTokenizer`
encodes through the Rust tokenizer without importing transformers, for the scorer. Each is used only for a checkpoint
whose verdict file (`crossknow.models.checkpoint_cache`, per transformers version) records the same ids, text and
special tokens as AutoTokenizer on `PROBES`; every other directory loads with AutoTokenizer (docs/speed.md).
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
VERDICT_FORMAT = 2
"""Version of the verdict's fields (2 added `scoring_tokenizer_equal`); a verdict of another is not current."""
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


def _special_tokens(path: Path) -> dict[str, str]:
    """SPECIAL_TOKENS' texts as the checkpoint's tokenizer_config.json gives them."""
    config = json.loads((path / "tokenizer_config.json").read_text(encoding="utf-8"))
    specials = {}
    for name in SPECIAL_TOKENS:
        value = config.get(name)
        if isinstance(value, dict):
            value = value.get("content")
        if value is not None:
            specials[name] = value
    return specials


def load_fast_tokenizer(path: str | Path) -> Any:
    """The tokenizer of checkpoint `path` from its tokenizer.json through the Rust loader, with the
    special tokens of its tokenizer_config.json."""
    from transformers import PreTrainedTokenizerFast  # not AutoTokenizer: its import alone costs seconds

    path = Path(path)
    return PreTrainedTokenizerFast(tokenizer_file=str(path / "tokenizer.json"), name_or_path=str(path),
                                   **_special_tokens(path))


class Encoded(dict):
    """{"input_ids": ids}, read as a mapping or as `.input_ids`, as transformers' encodings are."""

    @property
    def input_ids(self) -> list[int]:
        """The token ids."""
        return self["input_ids"]


class ScoringTokenizer:
    """A checked checkpoint's tokenizer for the scorer: `tokenizer(text).input_ids` and the special tokens'
    ids straight from the Rust tokenizer; any other call or attribute from `load_fast_tokenizer`'s
    tokenizer, loaded on first use."""

    def __init__(self, path: str | Path):
        from tokenizers import Tokenizer

        self.path = Path(path)
        self._rust = Tokenizer.from_file(str(self.path / "tokenizer.json"))
        self._full: Any = None
        specials = _special_tokens(self.path)
        for name in SPECIAL_TOKENS:
            content = specials.get(name)
            setattr(self, name + "_id", None if content is None else self._rust.token_to_id(content))

    def __call__(self, text: Any, **kwargs: Any) -> Any:
        """The encoding of `text` with `.input_ids`, special tokens added, as the fast load gives it."""
        if kwargs or not isinstance(text, str):
            return self.full(text, **kwargs)
        return Encoded(input_ids=self._rust.encode(text).ids)

    @property
    def full(self) -> Any:
        """`load_fast_tokenizer`'s tokenizer of the same checkpoint."""
        if self._full is None:
            self._full = load_fast_tokenizer(self.path)
        return self._full

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_full", "_rust", "path"):
            raise AttributeError(name)
        return getattr(self.full, name)

    def __len__(self) -> int:
        return len(self.full)


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
    """Compare the fast load and the ScoringTokenizer of checkpoint `path` with AutoTokenizer's on PROBES,
    write the verdict file atomically, return whether the fast load is the same."""
    from transformers import AutoTokenizer

    path = Path(path)
    reference = AutoTokenizer.from_pretrained(path)
    has_json = (path / "tokenizer.json").is_file()
    equal = has_json and not differences(load_fast_tokenizer(path), reference, PROBES)
    verdict = {
        "fast_tokenizer_equal": equal,
        "scoring_tokenizer_equal": equal and not differences(ScoringTokenizer(path), reference, PROBES),
        "transformers": version("transformers"),
        "format": VERDICT_FORMAT,
    }
    with tempfile.NamedTemporaryFile("w", dir=path, prefix=".verdict-", delete=False, encoding="utf-8") as file:
        json.dump(verdict, file)
    os.replace(file.name, path / VERDICT_FILE)
    return equal


def has_current_verdict(path: str | Path) -> bool:
    """Whether checkpoint `path` holds a verdict of VERDICT_FORMAT made under the installed transformers."""
    try:
        verdict = json.loads((Path(path) / VERDICT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return verdict.get("transformers") == version("transformers") and verdict.get("format") == VERDICT_FORMAT


def load_tokenizer(path: str, revision: str | None, scoring: bool = False, trust_remote_code: bool = False) -> Any:
    """The tokenizer of `path`: where a current verdict says they are the same, the ScoringTokenizer (with
    `scoring`) or the fast load; else AutoTokenizer (running the checkpoint's own code with `trust_remote_code`)."""
    if revision is None and not trust_remote_code and has_current_verdict(path):
        verdict = json.loads((Path(path) / VERDICT_FILE).read_text(encoding="utf-8"))
        if scoring and verdict.get("scoring_tokenizer_equal"):
            return ScoringTokenizer(path)
        if verdict.get("fast_tokenizer_equal"):
            return load_fast_tokenizer(path)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, revision=revision, trust_remote_code=trust_remote_code)
