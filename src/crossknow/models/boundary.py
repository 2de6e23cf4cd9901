"""The one tokenisation rule at the context/continuation boundary (DESIGN.md, "Scoring rules").

Trailing spaces of the context move to the front of the continuation (the text is unchanged,
only the split point moves); then ctx = tok(context), whole = tok(context + continuation), and the
continuation tokens are whole[len(ctx):]. The model input is ctx + continuation tokens.

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

from crossknow.errors import UnscorableRequest


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
    encode: Callable[[str], list[int]], context: str, continuation: str
) -> tuple[list[int], list[int]]:
    """Token ids of (context, continuation) under the boundary rule.

    `encode` adds special tokens as the tokenizer does by default (an empty context is then
    just BOS). Raises UnscorableRequest (index None; the backend sets it) when the tokenizer
    merges across the boundary (whole[:len(ctx)] != ctx) or the continuation yields no token.
    """
    context, continuation = move_trailing_spaces(context, continuation)
    ctx = encode(context)
    whole = encode(context + continuation)
    if whole[: len(ctx)] != ctx:
        raise merge_error(context, continuation)
    cont = whole[len(ctx):]
    if not cont:
        raise empty_continuation_error(context, continuation)
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
