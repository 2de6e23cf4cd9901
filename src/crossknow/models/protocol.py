"""The Scorer protocol: log-probabilities of continuations given contexts.

Every normalisation (mean per token, per character, sum) is computed from a `ScoreResult`
in `crossknow.scoring`, never inside a backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from crossknow.models.boundary import Boundary


@dataclass(frozen=True)
class ScoreRequest:
    """Score `continuation` given `context`.

    Backends apply the boundary rule of `crossknow.models.boundary` that `boundary` names: by
    default (`moved`) trailing spaces of the context move to the front of the continuation before
    tokenisation; `literal` is the AdaXEval authors' tokenisation (local backends only).
    """

    context: str
    continuation: str
    boundary: Boundary = "moved"
    continuation_ids: tuple[int, ...] | None = None
    """The continuation as token ids of the scorer's tokenizer, scored exactly as given after the context's
    tokens (an empty context is BOS), with no boundary rule: for sequences edited after tokenisation.
    `continuation` is then their text, for messages. Local backends only."""


@dataclass(frozen=True)
class ScoreResult:
    """The scored continuation of one request."""

    logprob_sum: float
    """Sum of the continuation tokens' natural-log probabilities, float32 precision or better."""
    n_tokens: int
    """Number of continuation tokens scored."""
    greedy: bool
    """True when greedy decoding from the context would produce exactly these tokens."""
    token_logprobs: tuple[float, ...] | None = None
    """Per-token log-probabilities, kept only when the caller asked for them."""


@runtime_checkable
class Scorer(Protocol):
    """A backend that scores continuations. One method to implement."""

    name: str
    """Backend name as registered ('default', 'hf', 'gguf', 'openai')."""
    model_id: str
    """Resolved model identity: a path, hub id with revision, or server model name."""
    dtype: str
    """Compute dtype ('float32', 'bfloat16', or 'server' for remote backends)."""

    def score(self, requests: Sequence[ScoreRequest], keep_token_logprobs: bool = False) -> list[ScoreResult]:
        """Score every request; results are in request order."""
        ...
