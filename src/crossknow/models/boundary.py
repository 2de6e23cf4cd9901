"""The one tokenisation rule at the context/continuation boundary (DESIGN.md, "Scoring rules").

Trailing spaces of the context move to the front of the continuation (the text is unchanged,
only the split point moves); then ctx = tok(context), whole = tok(context + continuation), and the
continuation tokens are whole[len(ctx):]. The model input is ctx + continuation tokens.
"""

from __future__ import annotations

from collections.abc import Callable


def move_trailing_spaces(context: str, continuation: str) -> tuple[str, str]:
    """Move the context's trailing spaces (' ' only; newlines stay) to the continuation's front."""
    stripped = context.rstrip(" ")
    return stripped, context[len(stripped):] + continuation


def move_trailing_whitespace(context: str, continuation: str) -> tuple[str, str]:
    """Move all trailing whitespace, newlines included, as lm-evaluation-harness does."""
    stripped = context.rstrip()
    return stripped, context[len(stripped):] + continuation


def encode_pair(
    encode: Callable[[str], list[int]], context: str, continuation: str
) -> tuple[list[int], list[int]]:
    """Token ids of (context, continuation) under the boundary rule.

    `encode` adds special tokens as the tokenizer does by default (an empty context is then
    just BOS). Raises ValueError if the continuation yields no token of its own.
    """
    context, continuation = move_trailing_spaces(context, continuation)
    ctx = encode(context)
    whole = encode(context + continuation)
    cont = whole[len(ctx):]
    if not cont:
        raise ValueError(f"continuation {continuation!r} has no tokens of its own after context {context[-40:]!r}")
    return ctx, cont
