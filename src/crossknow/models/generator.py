"""The Generator protocol: chat or plain-text completions with optional JSON-schema output and top log-probabilities.

A `GenerateRequest` holds chat `messages` (the backend applies the model's chat markup) or a completion `prompt`
(text the model continues as it is); a backend's `prompt_format` is the form its model takes best. Backends
implement `generate`; prompts, validation, retries of malformed output and the request cache live in
`crossknow.generation`, never inside a backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from crossknow.errors import CrossknowError
from crossknow.models.protocol import Scorer

PromptFormat = Literal["chat", "completion"]
"""How a generator is best asked: chat messages (a model with a chat template) or a plain completion
prompt (a base model)."""
PROMPT_FORMATS: tuple[str, ...] = ("auto", "chat", "completion")
"""What a model spec's format suffix (or a backend's `prompt_format` argument) may say; "auto" lets
the backend decide from the model (see `crossknow.models.registry`)."""


@dataclass(frozen=True)
class ChatMessage:
    """One chat turn."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class GenerateRequest:
    """A chat prompt (`messages`) or a completion prompt (`prompt`), exactly one of them, with its
    sampling settings."""

    messages: tuple[ChatMessage, ...] = ()
    """The chat turns; empty for a completion request."""
    prompt: str | None = None
    """A completion request's text, continued as it is: no chat markup (local backends add BOS)."""
    max_tokens: int = 256
    """Most tokens to generate."""
    temperature: float = 0.0
    """0 means greedy decoding."""
    seed: int | None = None
    """Sampling seed, passed to backends that accept one."""
    json_schema: dict[str, Any] | None = field(default=None, hash=False)
    """When set, the backend is asked for a JSON object matching this schema (`response_format`)."""
    top_logprobs: int = 0
    """When above 0, the backend returns this many alternatives per generated token, where it can."""
    stop: tuple[str, ...] = ()
    """Strings that end the output where they first appear; the returned text stops before them."""

    def __post_init__(self) -> None:
        if (self.prompt is None) == (not self.messages):
            raise CrossknowError("a generate request holds chat messages or a completion prompt, exactly one of them")


@dataclass(frozen=True)
class TokenAlternatives:
    """One generated token and the most likely alternatives at its position."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...]
    """(token text, natural-log probability) pairs, most likely first."""


@dataclass(frozen=True)
class Usage:
    """Token usage of one call, as the backend reports it (0 where it reports nothing)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class GenerateResult:
    """The backend's answer to one request."""

    text: str
    """The generated text."""
    backend: str
    """Backend name as registered ('default', 'hf', 'openai')."""
    model_id: str
    """Resolved model identity."""
    usage: Usage = Usage()
    logprobs: tuple[TokenAlternatives, ...] | None = None
    """Per generated token, when `top_logprobs` was asked and the backend gives them."""
    finish_reason: str | None = None
    """'stop', 'length', ... as the backend reports it."""


class GenerationFailed(CrossknowError):
    """Some requests of a `generate` call failed after their retries; the others succeeded.

    `results` is in request order with None where a request failed; `failures` maps those
    indices to what went wrong (API keys redacted).
    """

    def __init__(self, results: Sequence[GenerateResult | None], failures: dict[int, str]):
        self.results = list(results)
        self.failures = dict(failures)
        first = min(failures)
        super().__init__(
            f"{len(failures)} of {len(self.results)} generation requests failed; "
            f"first (request {first}): {failures[first]}"
        )


@runtime_checkable
class Generator(Protocol):
    """A backend that completes chat and completion prompts. One method to implement."""

    name: str
    """Backend name as registered."""
    model_id: str
    """Resolved model identity: a path, hub id with revision, or server model name."""
    prompt_format: PromptFormat
    """The form this model is asked in where a stage can ask either way: 'chat' for a model with a
    chat template, 'completion' for a base model (or as the model spec's suffix says)."""

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        """Answer every request; results are in request order. Transport errors are retried inside;
        requests that still fail raise `GenerationFailed` with the results of the others."""
        ...


@runtime_checkable
class ServerGenerator(Protocol):
    """A generator whose answers come from a server: the same model name on two servers is two
    models, so the request cache keys its requests by `server_identity()` too."""

    def server_identity(self) -> dict[str, Any]:
        """The server's base URL and the backend's settings that change what the server receives."""
        ...


@dataclass(frozen=True)
class AnswerContinuation:
    """Text that could follow a prompt (chat or completion, as in a GenerateRequest) and the start of
    the model's answer to it."""

    messages: tuple[ChatMessage, ...]
    """The chat prompt, as in a GenerateRequest; empty for a completion prompt."""
    answer_prefix: str
    """The start of the model's answer (what it generated before the point of interest)."""
    continuation: str
    """The text to score after the prefix."""
    prompt: str | None = None
    """The completion prompt, as in a GenerateRequest; None for a chat prompt."""


@runtime_checkable
class AnswerScorer(Protocol):
    """A generator that can also score continuations of its own answers (local models do, through
    the engine's Scorer): exact log-probabilities, not a server's top-k alternatives. The yes/no
    confidence of a JSON field uses it where a backend offers it."""

    def score_answers(self, requests: Sequence[AnswerContinuation]) -> list[float]:
        """Summed natural-log probability of each request's continuation; in request order."""
        ...


@runtime_checkable
class SharesWeights(Protocol):
    """A local generator whose loaded weights also score: a pool asked for the same model's Scorer takes
    `scorer()` instead of loading a second copy."""

    def scorer(self) -> Scorer:
        """A Scorer over this generator's loaded model (built once)."""
        ...
