"""The tokenisation rule at the context/continuation boundary (DESIGN.md, "Scoring rules").

`moved`, the default and crossknow's rule: trailing spaces of the context move to the front of the
continuation (the text is unchanged, only the split point moves); then ctx = tok(context),
whole = tok(context + continuation), and the continuation tokens are whole[len(ctx):]. The model
input is ctx + continuation tokens.

`literal`, a compatibility switch for reproducing the AdaXEval authors' published numbers, never
the default: their code does not move the spaces. ctx = tok(context) with its trailing space,
whole = tok(context + continuation), continuation tokens = whole[len(ctx):], model input = ctx +
continuation tokens, with no check of the boundary. With tokenizers that write a word's leading
space into the word's token (Gemma, every SentencePiece model), a context ending in a space
encodes that space as a token of its own that `whole` does not have, so whole[len(ctx):] starts
one token late: the continuation's first token is dropped, and the rest is scored after the lone
space token. On English cloze items (a space before almost every [BLANK]) this scores a shorter,
different continuation; where the context ends in no space (question items, Japanese cloze
items without a space) the two rules give the same tokens unless the tokenizer merges across the
boundary, which `literal` lets through as the authors' code does.

crossknow's choice where the tokenizer merges across the boundary: when whole[:len(ctx)] != ctx
(a token of `whole` spans the end of the context and the start of the continuation, as Gemma's
tokenizer does with Japanese particles: 'インスリンは血糖値' + 'を下げる' encodes '値を' as one token),
no split of `whole` is the continuation, and the sequence lm-evaluation-harness scores
(ctx + whole[len(ctx):]) is not the text. The request is unscorable: `UnscorableRequest` names the
boundary, and the scoring stage records the item as invalid. The alternative, scoring `whole` split
at its first token that differs from `ctx`, would score text that belongs to the context and give
options of one item different boundaries; it was not needed: none of the 3,026 requests of the
AdaXEval paper examples and the Japanese Cross-Lingual Pitfalls pairs (both rules, English and
Japanese) merges with the embedded Gemma 3 tokenizer. Local backends check the token ids
(`encode_pair`); the OpenAI-compatible backend, which sees only the server's tokens of the whole
prompt, checks that one of them starts exactly at the boundary (`continuation_start`): for BPE and
SentencePiece vocabularies the two conditions are the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from crossknow.errors import UnscorableRequest

Boundary = Literal["moved", "literal"]
BOUNDARIES: tuple[Boundary, ...] = ("moved", "literal")
"""The boundary rules: `moved` (crossknow's, the default) and `literal` (the AdaXEval authors')."""
BOUNDARY_HELP = (
    "Tokenisation at the context/continuation boundary: 'moved' (crossknow's rule, the default: the context's "
    "trailing spaces move to the front of the continuation) or 'literal' (the AdaXEval authors' tokenisation, to "
    "reproduce their numbers: the context keeps its trailing space, so with tokenizers that put a word's leading "
    "space in its token, as Gemma's, the continuation's first token is dropped; rule adaxeval and local models "
    "only)."
)
"""The help and config description of a `boundary` setting (evaluate and trace)."""


def move_trailing_spaces(context: str, continuation: str) -> tuple[str, str]:
    """Move the context's trailing spaces (' ' only; newlines stay) to the continuation's front."""
    stripped = context.rstrip(" ")
    return stripped, context[len(stripped):] + continuation


def move_trailing_whitespace(context: str, continuation: str) -> tuple[str, str]:
    """Move all trailing whitespace, newlines included, as lm-evaluation-harness does."""
    stripped = context.rstrip()
    return stripped, context[len(stripped):] + continuation


def merge_error(context: str, continuation: str, token: str | None = None) -> UnscorableRequest:
    """The error for a token that spans the context/continuation boundary (`token`, when known)."""
    which = f" ({token!r})" if token else ""
    return UnscorableRequest(
        f"the tokenizer merges the end of the context and the start of the continuation into one "
        f"token{which} at the boundary {context[-20:]!r} | {continuation[:20]!r}, so no run of tokens "
        "is the continuation; split the item elsewhere (e.g. keep the merged characters on one side)"
    )


def empty_continuation_error(context: str, continuation: str) -> UnscorableRequest:
    """The error for a continuation that yields no token of its own."""
    return UnscorableRequest(
        f"continuation {continuation[:40]!r} has no tokens of its own after context {context[-40:]!r}"
    )


def encode_pair(
    encode: Callable[[str], list[int]], context: str, continuation: str, boundary: Boundary = "moved"
) -> tuple[list[int], list[int]]:
    """Token ids of (context, continuation) under the `boundary` rule (see the module docstring).

    `encode` adds special tokens as the tokenizer does by default (an empty context is then
    just BOS). Raises UnscorableRequest (index None; the backend sets it) when the continuation
    yields no token or, under `moved`, when the tokenizer merges across the boundary
    (whole[:len(ctx)] != ctx).
    """
    if boundary == "literal":
        return _encode_literal(encode, context, continuation)
    if boundary != "moved":
        raise ValueError(f"unknown boundary {boundary!r}; choose one of {', '.join(BOUNDARIES)}")
    context, continuation = move_trailing_spaces(context, continuation)
    ctx = encode(context)
    whole = encode(context + continuation)
    if whole[: len(ctx)] != ctx:
        raise merge_error(context, continuation)
    cont = whole[len(ctx):]
    if not cont:
        raise empty_continuation_error(context, continuation)
    return ctx, cont


def _encode_literal(
    encode: Callable[[str], list[int]], context: str, continuation: str
) -> tuple[list[int], list[int]]:
    """The AdaXEval authors' split: whole[len(tok(context)):], the context's trailing spaces kept in it."""
    ctx = encode(context)
    cont = encode(context + continuation)[len(ctx):]
    if not cont:
        raise UnscorableRequest(
            f"continuation {continuation[:40]!r} keeps no token under the literal boundary after context "
            f"{context[-40:]!r} (its only token was dropped with the context's trailing space)"
        )
    return ctx, cont


def continuation_start(token_offsets: Sequence[int], tokens: Sequence[str], context: str, prompt: str) -> int:
    """Index of the first token of the continuation among a server's tokens of `prompt`.

    `token_offsets[i]` is the character at which `tokens[i]` starts in `prompt`, and `prompt`
    is `context + continuation` after the spaces moved. The same rule as `encode_pair`: one
    token must start exactly at `len(context)`, else UnscorableRequest; an empty context starts
    at the first token. Raises UnscorableRequest too when no token starts at or after the boundary.
    """
    cut = len(context)
    first = next((i for i, offset in enumerate(token_offsets) if offset >= cut), len(token_offsets))
    if first < len(token_offsets) and token_offsets[first] == cut:
        return first
    if first == 0 or cut == len(prompt):
        raise empty_continuation_error(context, prompt[cut:])
    raise merge_error(context, prompt[cut:], tokens[first - 1])  # the token before `first` spans the boundary
