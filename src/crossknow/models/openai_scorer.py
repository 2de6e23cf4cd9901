"""Scorer backend for OpenAI-compatible servers (spec `openai:MODEL`).

Each request becomes one POST to `{base_url}/completions` with `prompt = context + continuation`,
`echo: true`, `logprobs: 1`, `temperature: 0` and `max_tokens: 1`. The server echoes the prompt's
tokens with their log-probabilities, top-1 alternatives and character offsets; the continuation's
tokens are the prompt tokens whose offset is at or after `len(context)` (after the boundary rule of
`crossknow.models.boundary` moved the context's trailing spaces into the continuation). The one
generated token is ignored.

Why `max_tokens: 1`: vLLM and OpenAI read `max_tokens: 0` with echo as "echo only", but
llama-cpp-python's server reads 0 as "no limit" and generates until its context is full. One
generated token is accepted everywhere and costs one decoding step.

What the server decides, not crossknow: the server tokenises the whole prompt once. When its
tokens split at the context/continuation boundary (the usual case for SentencePiece and BPE
vocabularies once the spaces have moved), this equals the boundary rule of DESIGN.md. When one
token spans the boundary, the continuation has no tokens of its own and `score` raises.

Empty context: the whole prompt is the continuation. Servers that echo the BOS token (vLLM)
report its log-probability as null and give every continuation token a log-probability, so all
are scored, as in the local backends. Servers that strip BOS from the echo (llama-cpp-python) or
have none (OpenAI) report null for the continuation's first token: that token is left out of the
result (`n_tokens`, `logprob_sum`, `greedy` and `token_logprobs` then cover the tokens after it)
and a warning is logged once per scorer. The server gives no way to recover that number.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import email.utils
import logging
import math
import os
import random
import time
from collections.abc import Sequence
from typing import Any

from crossknow.errors import CrossknowError, MissingDependencyError
from crossknow.models.boundary import move_trailing_spaces
from crossknow.models.protocol import ScoreRequest, ScoreResult

log = logging.getLogger(__name__)

ECHO_MAX_TOKENS = 1
"""Tokens the server generates after the echoed prompt; they are ignored (see module docstring)."""
RETRY_STATUSES = frozenset({408, 429})
"""HTTP statuses retried besides every 5xx."""
RETRY_AFTER_CAP_S = 300.0
"""The longest wait a server's Retry-After header can impose before one retry."""
BACKOFF_CAP_S = 30.0
"""The longest exponential-backoff wait between two attempts."""
GREEDY_TOLERANCE = 1e-6
"""A token is top-1 when its log-probability is within this of the best alternative's."""


class _Secret:
    """An API key that never shows in a repr, str or traceback's locals rendering."""

    __slots__ = ("_value",)

    def __init__(self, value: str | None):
        self._value = value or None

    def reveal(self) -> str | None:
        return self._value

    def redact(self, text: str) -> str:
        """`text` with every occurrence of the key replaced by '***'."""
        return text.replace(self._value, "***") if self._value else text

    def __repr__(self) -> str:
        return "<secret>" if self._value else "<no key>"

    __str__ = __repr__


def _import_httpx() -> Any:
    try:
        import httpx
    except ImportError:
        raise MissingDependencyError("httpx", "openai", "The openai: backend") from None
    return httpx


class OpenAIScorer:
    """Scores continuations through an OpenAI-compatible `/v1/completions` endpoint.

    `model` is the server's model name; `base_url` ends before `/completions` (for example
    `http://127.0.0.1:8000/v1`). The API key is read from the environment variable `api_key_env`
    and is optional (local servers need none); it is sent as a bearer token and redacted from
    every error and log message. Up to `concurrency` requests are in flight at once; 429, 408, 5xx,
    timeouts and connection errors are retried up to `max_retries` times with exponential backoff
    and jitter (or after the server's Retry-After); any other 4xx fails at once.
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
        self._httpx = _import_httpx()
        if concurrency < 1:
            raise CrossknowError(f"openai: concurrency must be at least 1, got {concurrency}")
        if max_retries < 0:
            raise CrossknowError(f"openai: max_retries must be 0 or more, got {max_retries}")
        self.model_id = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self.timeout_s = float(timeout_s)
        self.max_retries = max_retries
        self.backoff_base_s = float(backoff_base_s)
        self._key = _Secret(os.environ.get(api_key_env))
        self._url = f"{self.base_url}/completions"
        try:
            scheme = self._httpx.URL(self._url).scheme
        except Exception as exc:  # httpx.InvalidURL and friends
            raise CrossknowError(f"openai: invalid base URL {self._safe(base_url)!r}: {exc}") from None
        if scheme not in ("http", "https"):
            raise CrossknowError(f"openai: base URL must start with http:// or https://, got {self._safe(base_url)!r}")
        self._warned_first_token = False
        self._warned_no_top = False

    def __repr__(self) -> str:
        key = "set" if self._key.reveal() else "unset"
        return (
            f"OpenAIScorer(model={self.model_id!r}, base_url={self._safe(self.base_url)!r}, "
            f"api_key_env={self.api_key_env!r} ({key}), concurrency={self.concurrency})"
        )

    def _safe(self, text: str) -> str:
        return self._key.redact(text)

    # ---- public API -------------------------------------------------------------------------

    def score(self, requests: Sequence[ScoreRequest], keep_token_logprobs: bool = False) -> list[ScoreResult]:
        """Score every request through the server; results are in request order.

        A plain synchronous call: it runs its own event loop, in a worker thread when the caller
        already has one running (a notebook, an async application).
        """
        pairs = [move_trailing_spaces(r.context, r.continuation) for r in requests]
        for context, continuation in pairs:
            if not continuation:
                raise CrossknowError(f"openai: empty continuation after context {context[-40:]!r}")
        if not pairs:
            return []

        def run() -> list[ScoreResult]:
            return asyncio.run(self._score_all(pairs, keep_token_logprobs))

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return run()
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(run).result()

    # ---- transport --------------------------------------------------------------------------

    async def _score_all(self, pairs: list[tuple[str, str]], keep: bool) -> list[ScoreResult]:
        httpx = self._httpx
        headers = {"Content-Type": "application/json"}
        key = self._key.reveal()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        semaphore = asyncio.Semaphore(self.concurrency)
        async with httpx.AsyncClient(timeout=httpx.Timeout(self.timeout_s), limits=limits, headers=headers) as client:

            async def one(context: str, continuation: str) -> ScoreResult:
                prompt = context + continuation
                async with semaphore:
                    body = await self._post(client, prompt)
                return self._parse(body, context, prompt, keep)

            tasks = [asyncio.create_task(one(c, k)) for c, k in pairs]
            try:
                return list(await asyncio.gather(*tasks))
            except BaseException:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise

    async def _post(self, client: Any, prompt: str) -> dict:
        """POST one completion request, retrying transient failures; returns the decoded JSON."""
        httpx = self._httpx
        payload = {
            "model": self.model_id,
            "prompt": prompt,
            "max_tokens": ECHO_MAX_TOKENS,
            "temperature": 0,
            "logprobs": 1,
            "echo": True,
        }
        transient = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
        for attempt in range(self.max_retries + 1):
            retry_after: float | None = None
            try:
                response = await client.post(self._url, json=payload)
            except transient as exc:
                problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            else:
                status = response.status_code
                if status == 200:
                    try:
                        body = response.json()
                    except ValueError:
                        problem = "HTTP 200 with a body that is not valid JSON"
                    else:
                        if isinstance(body, dict):
                            return body
                        problem = "HTTP 200 with a JSON body that is not an object"
                elif status in RETRY_STATUSES or status >= 500:
                    problem = f"HTTP {status}: {_server_message(response)}"
                    retry_after = _parse_retry_after(response.headers.get("retry-after"))
                else:
                    raise CrossknowError(
                        self._safe(
                            f"openai: {self._url} refused the request for model {self.model_id!r} with "
                            f"HTTP {status}: {_server_message(response)}"
                        )
                    )
            if attempt == self.max_retries:
                raise CrossknowError(
                    self._safe(
                        f"openai: {self._url} failed {attempt + 1} times for model {self.model_id!r}; "
                        f"last problem: {problem}"
                    )
                )
            delay = retry_after if retry_after is not None else self._backoff(attempt)
            log.warning(self._safe(f"openai: {problem}; retry {attempt + 1} of {self.max_retries} in {delay:.2f} s"))
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter: between half and all of base * 2**attempt, capped."""
        ceiling = min(BACKOFF_CAP_S, self.backoff_base_s * 2**attempt)
        return ceiling * (0.5 + 0.5 * random.random())

    # ---- response ---------------------------------------------------------------------------

    def _parse(self, body: dict, context: str, prompt: str, keep: bool) -> ScoreResult:
        """The continuation's ScoreResult from one echoed completion."""
        choices = body.get("choices")
        if not choices:
            raise CrossknowError(self._safe(f"openai: response without choices: {_short(body)}"))
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

        # Entries [start, end) are the echoed prompt tokens; `shift` maps their offsets to prompt
        # characters. vLLM echoes BOS as text ('<bos>') that is not in the prompt, and counts it
        # in every later offset.
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

        cut = len(context)
        chosen = [i for i in range(start, end) if offsets[i] - shift >= cut]
        for i in chosen:
            begin, piece = offsets[i] - shift, tokens[i]
            if piece and "\ufffd" not in piece and prompt[begin : begin + len(piece)] != piece:
                raise CrossknowError(
                    f"openai: the server's token {piece!r} at character {begin} does not match the "
                    "prompt text there; cannot locate the continuation's tokens"
                )
        if context and (not chosen or offsets[chosen[0]] - shift != cut):
            before = [i for i in range(start, end) if offsets[i] - shift < cut]
            where = f" ({tokens[before[-1]]!r} starts at character {offsets[before[-1]] - shift})" if before else ""
            raise CrossknowError(
                "openai: the server's tokenizer merged the end of the context and the start of the "
                f"continuation into one token{where}, so the continuation {prompt[cut:][:40]!r} has "
                f"no tokens of its own after context {context[-40:]!r}; score this item with a local "
                "backend (hf:, gguf:) or split it elsewhere"
            )
        if not chosen:
            raise CrossknowError(f"openai: the server returned no tokens for continuation {prompt[cut:][:40]!r}")
        if values[chosen[0]] is None and not context:
            chosen = chosen[1:]
            if not self._warned_first_token:
                self._warned_first_token = True
                log.warning(
                    "openai: %s reports no log-probability for a prompt's first token; with an "
                    "empty context the continuation's first token is left out of its score",
                    self._url,
                )
            if not chosen:
                raise CrossknowError(
                    f"openai: continuation {prompt[:40]!r} with an empty context is a single token, "
                    "whose log-probability this server does not report"
                )
        scored: list[float] = []
        greedy = True
        for i in chosen:
            value = values[i]
            if value is None:
                raise CrossknowError(f"openai: the server gave no log-probability for token {tokens[i]!r}")
            scored.append(float(value))
            top = tops[i]
            if not top:
                if not self._warned_no_top:
                    self._warned_no_top = True
                    log.warning("openai: %s returned no top_logprobs; greedy is reported False", self._url)
                greedy = False
            elif float(value) < max(float(v) for v in top.values()) - GREEDY_TOLERANCE:
                greedy = False
        return ScoreResult(
            logprob_sum=math.fsum(scored),
            n_tokens=len(scored),
            greedy=greedy,
            token_logprobs=tuple(scored) if keep else None,
        )


def _parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delay in seconds or an HTTP date), capped."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - time.time()
    if math.isnan(seconds):
        return None
    return min(max(seconds, 0.0), RETRY_AFTER_CAP_S)


def _server_message(response: Any) -> str:
    """The error message in a server's response: OpenAI, vLLM and FastAPI shapes, else the text."""
    try:
        body = response.json()
    except ValueError:
        return _short(response.text) or "(empty body)"
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str) and error:
            return error
        for field in ("message", "detail"):
            if body.get(field):
                return _short(body[field])
    return _short(body)


def _short(value: Any, limit: int = 500) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
