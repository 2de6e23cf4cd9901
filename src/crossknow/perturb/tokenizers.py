"""The tokenizers of `crossknow perturb`: the model's (which makes and measures every variant) and the one
random-X draws from. Only the tokenizer is loaded, never the weights; a sequence's tokens are what the scorer
scores for it, its ids after BOS (`crossknow.models.boundary.encode_pair` with an empty context).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from crossknow.errors import CrossknowError
from crossknow.models.boundary import encode_pair

TOKENIZER_SPECS = "default, hf:PATH_OR_ID[@REVISION] or gguf:FILE"
"""The spec forms that name a local tokenizer."""


def check_tokenizer_spec(spec: str) -> None:
    """CrossknowError for a spec that names no local tokenizer (checked before any input is read)."""
    kind, _, rest = spec.partition(":")
    if not (spec == "default" or (kind in ("hf", "gguf") and rest)):
        raise CrossknowError(f"{spec!r} names no local tokenizer; token perturbations need {TOKENIZER_SPECS}")


@lru_cache(maxsize=4)
def load_spec_tokenizer(spec: str) -> tuple[Any, str]:
    """(tokenizer, its name as recorded) of a model spec, loaded once per process (the perturbations only read
    it); CrossknowError for a spec with no local tokenizer."""
    from crossknow.models.fast_tokenizer import load_tokenizer
    from crossknow.models.specs import resolve_local

    check_tokenizer_spec(spec)
    kind, _, rest = spec.partition(":")
    if kind == "hf":  # a tokenizer-only directory is enough: no config.json needed
        path, _, revision = rest.partition("@")
        return load_tokenizer(path, revision or None), f"hf:{rest}"
    local = resolve_local(spec)
    assert local is not None  # default and gguf: are local specs
    return load_tokenizer(local.path, local.revision), local.model_id or spec


@dataclass
class ModelTokens:
    """The model's tokenizer as the perturbations use it."""

    tokenizer: Any
    name: str
    """The tokenizer's name, recorded in every variant."""
    mask_token: str | None = None
    """mask-X's token; None: the unknown token, else the mask token, else the pad token."""

    def sequence_ids(self, text: str) -> list[int]:
        """The ids the scorer scores for `text` as a whole sequence: its tokens after BOS."""
        return encode_pair(lambda piece: list(self.tokenizer(piece).input_ids), "", text)[1]

    def offsets(self, text: str, ids: list[int]) -> list[tuple[int, int]]:
        """The character span of `text` each of `ids` (its sequence ids) covers, from the tokenizer's offsets."""
        encoded = self.tokenizer(text, return_offsets_mapping=True)
        tail = len(encoded.input_ids) - len(ids)
        if tail < 0 or list(encoded.input_ids[tail:]) != ids:
            raise CrossknowError(f"tokenizer {self.name}: the offsets of a text do not match its sequence ids")
        return [(int(start), int(end)) for start, end in encoded.offset_mapping[tail:]]

    def encode_piece(self, text: str) -> list[int]:
        """The ids of a piece of text inside a sequence: encoded without special tokens."""
        return list(self.tokenizer(text, add_special_tokens=False).input_ids)

    def decode(self, ids: list[int]) -> str:
        """The ids as text, special tokens kept (a mask shows as '<unk>')."""
        return self.tokenizer.decode(ids)

    @cached_property
    def mask_id(self) -> int:
        """The id of mask-X's token (see `mask_token`)."""
        if self.mask_token is not None:
            token = self.tokenizer.convert_tokens_to_ids(self.mask_token)
            unknown = token == getattr(self.tokenizer, "unk_token_id", None) and self.mask_token != self.unk
            if token is None or unknown:
                raise CrossknowError(f"--mask-token {self.mask_token!r} is not a token of {self.name}")
            return int(token)
        for name in ("unk_token_id", "mask_token_id", "pad_token_id"):
            value = getattr(self.tokenizer, name, None)
            if value is not None:
                return int(value)
        raise CrossknowError(f"{self.name} has no unknown, mask or pad token: name mask-X's token with --mask-token")

    @property
    def unk(self) -> str | None:
        """The tokenizer's unknown token, if it has one."""
        return getattr(self.tokenizer, "unk_token", None)


def special_ids(tokenizer: Any) -> set[int]:
    """Ids of the tokenizer's special tokens, registered ones and added tokens marked special."""
    ids = {int(i) for i in tokenizer.all_special_ids}
    decoder = getattr(tokenizer, "added_tokens_decoder", {}) or {}
    ids.update(int(i) for i, token in decoder.items() if getattr(token, "special", False))
    return ids


@dataclass
class Vocabulary:
    """random-X's source: the ids of a tokenizer's vocabulary, its special tokens left out.

    With the model's own tokenizer a drawn id is used as it is. With another tokenizer (crossknow's rule) the
    drawn id is decoded alone (`decode([id])`, that tokenizer's text of the token; SentencePiece tokenizers
    drop a word-initial space marker there) and the text encoded by the model's tokenizer without special
    tokens; a draw whose text is empty or holds U+FFFD (a lone byte of a multi-byte character) is drawn again.
    """

    tokenizer: Any
    name: str
    own: bool
    """True when this is the model's tokenizer (ids used as drawn)."""
    ids: list[int] = field(init=False)

    def __post_init__(self) -> None:
        special = special_ids(self.tokenizer)
        self.ids = [i for i in range(len(self.tokenizer)) if i not in special]
        if not self.ids:
            raise CrossknowError(f"tokenizer {self.name} has no ordinary tokens to draw from")

    def draw(self, rng: random.Random, model: ModelTokens) -> tuple[int, ...] | None:
        """One drawn token as the model's ids; None when the draw is unusable (see the class docstring)."""
        token = rng.choice(self.ids)
        if self.own:
            return (token,)
        text = self.tokenizer.decode([token])
        if not text or "\ufffd" in text:
            return None
        ids = model.encode_piece(text)
        return tuple(ids) if ids else None
