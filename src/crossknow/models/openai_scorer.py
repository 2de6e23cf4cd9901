"""Scorer backend for OpenAI-compatible servers (spec `openai:MODEL`): one `/completions` POST per request, with
`echo: true`, `logprobs: 1` and `max_tokens: 1` (llama-cpp-python's server reads 0 as "no limit").

The continuation's tokens are the echoed ones at or after `len(context)`. A token across the boundary, a first
log-probability the server nulls (an empty context), a non-finite one or a prompt the server refuses as longer than
its context makes the request unscorable; the `literal` boundary is refused, its tokens being no text's
(docs/distributed.md, "Scoring on a server").
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from crossknow.errors import CrossknowError, UnscorableRequest
from crossknow.models.boundary import continuation_start, empty_continuation_error, move_trailing_spaces
from crossknow.models.openai_http import OpenAIEndpoint, RequestRefused, gather_or_cancel, run_sync, short
from crossknow.models.protocol import ScoreRequest, ScoreResult

log = logging.getLogger(__name__)

ECHO_MAX_TOKENS = 1
"""Tokens the server generates after the echoed prompt; they are ignored (see module docstring)."""
LITERAL_REFUSED = (
    "the literal boundary (the AdaXEval authors' tokenisation) needs the model's tokenizer on this machine: "
    "it scores token ids (the context's lone trailing-space token, then the rest of the text's tokens) that are "
    "in general no text's tokenisation, and an OpenAI-compatible server tokenises the text it is sent; score "
    "with a local backend (default, hf:, gguf:) or use --boundary moved"
)
"""Why an OpenAI-compatible server cannot score a request under the literal boundary."""
CONTEXT_OVERFLOW = re.compile(r"context length|context window|maximum input length", re.IGNORECASE)
"""A 400 whose message says so refuses one request for its length, which makes that request unscorable rather than
the run failed: vLLM's messages since 0.10 ("the model's context length is only ...", "maximum input length"),
OpenAI's and vLLM's older "maximum context length", llama-cpp-python's "exceed context window"."""
GREEDY_TOLERANCE = 1e-6
"""A token is top-1 when its log-probability is within this of the best alternative's."""


class OpenAIScorer:
    """Scores continuations through an OpenAI-compatible `/v1/completions` endpoint.

    `model` is the server's model name; `base_url` ends before `/completions` (for example
    `http://127.0.0.1:8000/v1`). The API key is read from the environment variable `api_key_env`
    and is optional (local servers need none); it is sent as a bearer token and redacted from
    every error and log message. Up to `concurrency` requests are in flight at once; 429, 408, 5xx,
    timeouts and connection errors are retried up to `max_retries` times with exponential backoff
    and jitter (or after the server's Retry-After); any other 4xx fails at once
    (`crossknow.models.openai_http` holds this transport, shared with the generator).
    """

    name = "openai"
    dtype = "server"

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int = 8,
        timeout_s: float = 120,
        max_retries: int = 5,
        *,
        backoff_base_s: float = 0.5,
    ):
        self._endpoint = OpenAIEndpoint(
            model, base_url, "completions", api_key_env=api_key_env, concurrency=concurrency,
            timeout_s=timeout_s, max_retries=max_retries, backoff_base_s=backoff_base_s, logger=log,
        )
        self.model_id = model
        self.base_url = self._endpoint.base_url
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self._url = self._endpoint.url
        self._warned_no_top = False

    def __repr__(self) -> str:
        return f"OpenAIScorer({self._endpoint.describe()})"

    def _safe(self, text: str) -> str:
        return self._endpoint.safe(text)

    # ---- public API -------------------------------------------------------------------------

    def score(self, requests: Sequence[ScoreRequest], keep_token_logprobs: bool = False) -> list[ScoreResult]:
        """Score every request through the server; results are in request order.

        A plain synchronous call: it runs its own event loop, in a worker thread when the caller
        already has one running (a notebook, an async application).
        """
        if any(r.boundary != "moved" for r in requests):
            raise CrossknowError(LITERAL_REFUSED)
        if any(r.continuation_ids is not None for r in requests):
            raise CrossknowError("token-id continuations (sequences edited after tokenisation) need a local model "
                                 "(default, hf:, gguf:): a server scores text in its own tokenisation")
        pairs = [move_trailing_spaces(r.context, r.continuation) for r in requests]
        for index, (context, continuation) in enumerate(pairs):
            if not continuation:
                raise UnscorableRequest(str(empty_continuation_error(context, continuation)), index)
        if not pairs:
            return []
        return run_sync(lambda: self._score_all(pairs, keep_token_logprobs))

    # ---- transport --------------------------------------------------------------------------

    async def _score_all(self, pairs: list[tuple[str, str]], keep: bool) -> list[ScoreResult]:
        semaphore = asyncio.Semaphore(self.concurrency)
        async with self._endpoint.client() as client:

            async def one(index: int, context: str, continuation: str) -> ScoreResult:
                prompt = context + continuation
                payload = {
                    "model": self.model_id,
                    "prompt": prompt,
                    "max_tokens": ECHO_MAX_TOKENS,
                    "temperature": 0,
                    "logprobs": 1,
                    "echo": True,
                }
                async with semaphore:
                    try:
                        body = await self._endpoint.post(client, payload)
                    except RequestRefused as refused:
                        if refused.status == 400 and CONTEXT_OVERFLOW.search(refused.server_message):
                            raise UnscorableRequest(f"openai: longer than the server's context: "
                                                    f"{refused.server_message}", index) from refused
                        raise
                try:
                    return self._parse(body, context, prompt, keep)
                except UnscorableRequest as error:
                    raise UnscorableRequest(f"openai: {error}", index) from error

            return await gather_or_cancel([one(i, c, k) for i, (c, k) in enumerate(pairs)])

    # ---- response ---------------------------------------------------------------------------

    def _parse(self, body: dict, context: str, prompt: str, keep: bool) -> ScoreResult:
        """The continuation's ScoreResult from one echoed completion."""
        echo = self._echo(body, prompt)
        start, end, shift = _prompt_tokens(echo, body, prompt)
        offsets = [o - shift for o in echo.offsets[start:end]]
        first = start + continuation_start(offsets, echo.tokens[start:end], context, prompt)
        chosen = list(range(first, end))
        _check_alignment(echo, chosen, shift, prompt)
        if echo.values[first] is None and not context:
            raise UnscorableRequest(
                f"{self._url} reports no log-probability for a prompt's first token, so with an empty "
                f"context the first token {echo.tokens[first]!r} of continuation {prompt[:40]!r} cannot be scored "
                "(a server that echoes BOS, such as vLLM, or a local backend can)"
            )
        scored, greedy = self._continuation_logprobs(echo, chosen, context, prompt)
        return ScoreResult(
            logprob_sum=math.fsum(scored),
            n_tokens=len(scored),
            greedy=greedy,
            token_logprobs=tuple(scored) if keep else None,
        )

    def _echo(self, body: dict, prompt: str) -> _Echo:
        """The echoed tokens' lists of one completion, checked: all there, of one length, echoing `prompt`."""
        choices = body.get("choices")
        if not choices:
            raise CrossknowError(self._safe(f"openai: response without choices: {short(body)}"))
        logprobs = choices[0].get("logprobs") or {}
        tokens = logprobs.get("tokens")
        offsets = logprobs.get("text_offset")
        values = logprobs.get("token_logprobs")
        tops = logprobs.get("top_logprobs")
        if not tokens or offsets is None or values is None:
            raise CrossknowError(
                f"openai: {self._url} returned no echoed prompt log-probabilities for model "
                f"{self.model_id!r}; scoring needs a server whose /v1/completions supports echo "
                "with logprobs (vLLM, llama-cpp-python's server, OpenAI's completion models)"
            )
        if tops is None:
            tops = [None] * len(tokens)
        if not len(tokens) == len(offsets) == len(values) == len(tops):
            raise CrossknowError("openai: the server's logprobs lists differ in length")
        text = choices[0].get("text")
        if isinstance(text, str) and not text.startswith(prompt):
            raise CrossknowError("openai: the server echoed a different prompt than the one sent")
        return _Echo(tokens, offsets, values, tops)

    def _continuation_logprobs(
        self, echo: _Echo, chosen: list[int], context: str, prompt: str
    ) -> tuple[list[float], bool]:
        """The log-probabilities of the continuation's tokens (entries `chosen`), and whether greedy decoding would
        produce them all."""
        scored: list[float] = []
        greedy = True
        for i in chosen:
            value = echo.values[i]
            if value is None:
                raise CrossknowError(f"openai: the server gave no log-probability for token {echo.tokens[i]!r}")
            if not math.isfinite(float(value)):
                raise UnscorableRequest(
                    f"the log-probability of token {echo.tokens[i]!r} of continuation {prompt[len(context):][:40]!r} "
                    f"is {value}"
                )
            scored.append(float(value))
            top = echo.tops[i]
            if not top:
                if not self._warned_no_top:
                    self._warned_no_top = True
                    log.warning("openai: %s returned no top_logprobs; greedy is reported False", self._url)
                greedy = False
            elif float(value) < max(float(v) for v in top.values()) - GREEDY_TOLERANCE:
                greedy = False
        return scored, greedy


@dataclass(frozen=True)
class _Echo:
    """One echoed completion's parallel lists, one entry per token: the tokens, their character offsets, their
    log-probabilities (None where the server gives none) and their top alternatives (None where it gives none)."""

    tokens: list[str]
    offsets: list[int]
    values: list[float | None]
    tops: list[dict[str, float] | None]


def _prompt_tokens(echo: _Echo, body: dict, prompt: str) -> tuple[int, int, int]:
    """(start, end, shift): entries [start, end) of the completion `body` are the echoed prompt tokens (those after
    are the generated ones); `shift` maps their offsets to prompt characters."""
    tokens, offsets, values = echo.tokens, echo.offsets, echo.values
    # vLLM echoes BOS as text ('<bos>') that is not in the prompt, and counts it in every later offset.
    start, shift = 0, 0
    if (
        len(tokens) >= 2
        and values[0] is None
        and offsets[0] == 0
        and tokens[0]
        and not prompt.startswith(tokens[0])
        and offsets[1] == len(tokens[0])
    ):
        start, shift = 1, len(tokens[0])
    generated = (body.get("usage") or {}).get("completion_tokens")
    if isinstance(generated, int) and 0 <= generated <= len(tokens) - start:
        end = len(tokens) - generated
    else:
        end = start
        while end < len(tokens) and offsets[end] - shift < len(prompt):
            end += 1
    return start, end, shift


def _check_alignment(echo: _Echo, chosen: list[int], shift: int, prompt: str) -> None:
    """Each of the continuation's tokens (entries `chosen`) must be the prompt's text at its offset (a token holding
    a replacement character, part of a multi-byte character, is not compared)."""
    for i in chosen:
        begin, piece = echo.offsets[i] - shift, echo.tokens[i]
        if piece and "\ufffd" not in piece and prompt[begin : begin + len(piece)] != piece:
            raise CrossknowError(
                f"openai: the server's token {piece!r} at character {begin} does not match the "
                "prompt text there; cannot locate the continuation's tokens"
            )
