"""Which characters of a sequence's text each scored token covers (the per-token table of `trace-sequences`).

A sequence scored from its text takes the tokenizer's offset mapping; one scored from token ids takes the lengths
of its decoded prefixes (`_from_decoding`), whose spans refer to the text only when the ids decode to it exactly.
A token's text is its vocabulary entry (`convert_ids_to_tokens`: '▁world', '<0xE8>'), even where it covers no
whole character.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TokenSpans:
    """The scored tokens of one sequence, in order."""

    ids: list[int]
    texts: list[str]
    """Each token's vocabulary entry."""
    starts: list[int | None]
    """First character of `text` each token covers (null where the spans do not refer to the text)."""
    ends: list[int | None]
    """One past the last character each token covers."""


def _from_offsets(tokenizer: Any, text: str, ids: list[int]) -> list[tuple[int, int]] | None:
    """The tokenizer's offsets of `text`'s last len(ids) tokens, when those tokens are `ids` (the continuation of
    an empty context is the tail of the text's tokens, special tokens as the tokenizer adds them)."""
    try:
        encoded = tokenizer(text, return_offsets_mapping=True)
    except NotImplementedError:  # a slow (Python) tokenizer has no offsets
        return None
    tail = len(encoded.input_ids) - len(ids)
    if tail < 0 or list(encoded.input_ids[tail:]) != ids:
        return None
    return [(int(start), int(end)) for start, end in encoded.offset_mapping[tail:]]


def _from_decoding(tokenizer: Any, text: str, ids: list[int]) -> list[tuple[int, int]] | None:
    """Spans from the lengths of the decoded prefixes, len(decode(ids[:i])); None unless the ids decode to `text`
    exactly. A prefix that ends inside a character split over byte tokens decodes to a replacement character, so each
    length is lowered to the smallest one after it: the character goes to the byte token that starts it, and the
    other byte tokens of it cover no character (an empty span).
    """
    if tokenizer.decode(ids) != text:
        return None
    lengths = [len(prefix) for prefix in tokenizer.batch_decode([ids[:i] for i in range(len(ids) + 1)])]
    for i in range(len(lengths) - 2, -1, -1):
        lengths[i] = min(lengths[i], lengths[i + 1])
    return list(zip(lengths[:-1], lengths[1:], strict=True))


def token_spans(tokenizer: Any, text: str, ids: Sequence[int], from_text: bool) -> TokenSpans:
    """Ids, vocabulary entries and character spans of the scored tokens `ids` of a sequence whose text is
    `text`; `from_text` says the ids are the tokenisation of the text (else a token-level variant's ids)."""
    ids = [int(token) for token in ids]
    spans = (_from_offsets(tokenizer, text, ids) if from_text else None) or _from_decoding(tokenizer, text, ids)
    starts: list[int | None] = [start for start, _ in spans] if spans else [None] * len(ids)
    ends: list[int | None] = [end for _, end in spans] if spans else [None] * len(ids)
    return TokenSpans(ids, [str(entry) for entry in tokenizer.convert_ids_to_tokens(ids)], starts, ends)
