"""The tokenisation rule at the context/continuation boundary (DESIGN.md, "Scoring rules"; docs/scoring.md).

`moved`, the default and crossknow's rule: the context's trailing spaces move to the front of the continuation,
whose tokens are then tok(context + continuation)[len(tok(context)):]. `literal`, never the default, reproduces the
AdaXEval authors' tokenisation (the spaces stay). crossknow's choice where the tokenizer merges across the boundary:
the request is unscorable, checked on token ids (`encode_pair`) or on a server's offsets (`continuation_start`).
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
