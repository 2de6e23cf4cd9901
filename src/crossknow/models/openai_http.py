"""HTTP plumbing shared by the OpenAI-compatible backends (`openai:` scorer and generator).

One `OpenAIEndpoint` holds the URL, the API key (from an environment variable, sent as a bearer token, redacted from
every message), bounded concurrency, and one POST with retries: 429, 408, 5xx, timeouts, dropped connections and
non-JSON bodies back off with jitter or after Retry-After; any other 4xx is refused (`RequestRefused`). A request's
deadline covers every attempt and wait; past it, `RequestGaveUp` says how many attempts and what went wrong.
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
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NoReturn, TypeVar

from crossknow.errors import CrossknowError, MissingDependencyError

T = TypeVar("T")

RETRY_STATUSES = frozenset({408, 429})
"""HTTP statuses retried besides every 5xx."""
RETRY_AFTER_CAP_S = 300.0
"""The longest wait a server's Retry-After header can impose before one retry."""
BACKOFF_CAP_S = 30.0
"""The longest exponential-backoff wait between two attempts."""
DEFAULT_DEADLINE_S = 300.0
"""How long one request may take, all its attempts and waits together, unless told otherwise."""


class RequestRefused(CrossknowError):
    """The server answered with a status that is not retried (most 4xx)."""

    def __init__(self, message: str, status: int, server_message: str):
        super().__init__(message)
        self.status = status
        self.server_message = server_message


class RequestGaveUp(CrossknowError):
    """Every try of one request failed with a transient problem."""


class Secret:
    """An API key that never shows in a repr, str or traceback's locals rendering."""

    __slots__ = ("_value",)

    def __init__(self, value: str | None):
        self._value = value or None

    def reveal(self) -> str | None:
        """The key itself, for the Authorization header only."""
        return self._value

    def redact(self, text: str) -> str:
        """`text` with every occurrence of the key replaced by '***'."""
        return text.replace(self._value, "***") if self._value else text

    def __repr__(self) -> str:
        return "<secret>" if self._value else "<no key>"

    __str__ = __repr__


def import_httpx() -> Any:
    """The httpx module, or a MissingDependencyError that names the extra to install."""
    try:
        import httpx
    except ImportError:
        raise MissingDependencyError("httpx", "openai", "The openai: backend") from None
    return httpx


def run_sync(make_coroutine: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from synchronous code, in a worker thread when the caller
    already has an event loop running (a notebook, an async application)."""

    def run() -> T:
        return asyncio.run(make_coroutine())  # type: ignore[arg-type]

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run).result()


async def gather_or_cancel(coroutines: Sequence[Awaitable[T]]) -> list[T]:
    """Await all coroutines concurrently; on the first exception cancel the rest and re-raise."""
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


class OpenAIEndpoint:
    """One endpoint (`{base_url}/{path}`) of an OpenAI-compatible server, with retries."""

    def __init__(
        self,
        model: str,
        base_url: str,
        path: str,
        *,
        api_key_env: str,
        concurrency: int,
        timeout_s: float,
        max_retries: int,
        backoff_base_s: float,
        logger: logging.Logger,
        deadline_s: float = DEFAULT_DEADLINE_S,
    ):
        self.httpx = import_httpx()
        self.key = Secret(os.environ.get(api_key_env))
        if concurrency < 1:
            raise CrossknowError(f"openai: concurrency must be at least 1, got {concurrency}")
        if max_retries < 0:
            raise CrossknowError(f"openai: max_retries must be 0 or more, got {max_retries}")
        if not deadline_s > 0:
            raise CrossknowError(f"openai: deadline_s must be more than 0, got {deadline_s}")
        self.model_id = model
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/{path}"
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self.timeout_s = float(timeout_s)
        self.max_retries = max_retries
        self.backoff_base_s = float(backoff_base_s)
        self.deadline_s = float(deadline_s)
        self.log = logger
        try:
            scheme = self.httpx.URL(self.url).scheme
        except Exception as exc:  # httpx.InvalidURL and friends
            raise CrossknowError(f"openai: invalid base URL {self.safe(base_url)!r}: {exc}") from None
        if scheme not in ("http", "https"):
            raise CrossknowError(f"openai: base URL must start with http:// or https://, got {self.safe(base_url)!r}")

    def safe(self, text: str) -> str:
        """`text` with the API key redacted."""
        return self.key.redact(text)

    def describe(self) -> str:
        """The endpoint's settings for a repr; never the key."""
        key = "set" if self.key.reveal() else "unset"
        return (
            f"model={self.model_id!r}, base_url={self.safe(self.base_url)!r}, "
            f"api_key_env={self.api_key_env!r} ({key}), concurrency={self.concurrency}"
        )

    def client(self) -> Any:
        """An httpx.AsyncClient with the key, the timeout and a connection pool of `concurrency`."""
        httpx = self.httpx
        headers = {"Content-Type": "application/json"}
        key = self.key.reveal()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        return httpx.AsyncClient(timeout=httpx.Timeout(self.timeout_s), limits=limits, headers=headers)

    async def post(self, client: Any, payload: dict, refuse: Callable[[int, str], bool] | None = None) -> dict:
        """POST `payload`, retrying transient failures within the deadline; returns the decoded JSON object.

        `refuse(status, server_message)` marks an answer that would otherwise be retried as a
        refusal (for example a 500 that says the server does not know a request field).
        """
        started = time.monotonic()
        deadline = started + self.deadline_s
        problem = ""
        for attempt in range(self.max_retries + 1):
            try:
                outcome = await asyncio.wait_for(self._attempt(client, payload, refuse), deadline - time.monotonic())
            except TimeoutError:
                cut = f"attempt {attempt + 1} had no answer when the deadline came"
                self._give_up(attempt + 1, started, f"{problem}; then {cut}" if problem else cut)
            if isinstance(outcome, dict):
                return outcome
            problem, retry_after = outcome
            if attempt == self.max_retries:
                raise RequestGaveUp(
                    self.safe(
                        f"openai: {self.url} failed {attempt + 1} times for model {self.model_id!r}; "
                        f"last problem: {problem}"
                    )
                )
            delay = retry_after if retry_after is not None else self.backoff(attempt)
            if time.monotonic() + delay >= deadline:
                self._give_up(attempt + 1, started, f"{problem} (and the next try would begin past the deadline)")
            self.log.warning(
                self.safe(f"openai: {problem}; retry {attempt + 1} of {self.max_retries} in {delay:.2f} s")
            )
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def _attempt(
        self, client: Any, payload: dict, refuse: Callable[[int, str], bool] | None
    ) -> dict | tuple[str, float | None]:
        """One POST: the JSON object of a good answer, or (the problem, the server's Retry-After in
        seconds or None) for a transient failure; raises RequestRefused for a refusal."""
        httpx = self.httpx
        transient = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
        try:
            response = await client.post(self.url, json=payload)
        except transient as exc:
            return (f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__), None
        status = response.status_code
        if status == 200:
            try:
                body = response.json()
            except ValueError:
                return "HTTP 200 with a body that is not valid JSON", None
            if isinstance(body, dict):
                return body
            return "HTTP 200 with a JSON body that is not an object", None
        message = server_message(response)
        retryable = status in RETRY_STATUSES or status >= 500
        if not retryable or (refuse is not None and refuse(status, message)):
            raise RequestRefused(
                self.safe(
                    f"openai: {self.url} refused the request for model {self.model_id!r} with "
                    f"HTTP {status}: {message}"
                ),
                status,
                self.safe(message),
            )
        return f"HTTP {status}: {message}", parse_retry_after(response.headers.get("retry-after"))

    def _give_up(self, attempts: int, started: float, problem: str) -> NoReturn:
        """Raise RequestGaveUp for a request whose deadline passed."""
        raise RequestGaveUp(
            self.safe(
                f"openai: {self.url} gave up on a request for model {self.model_id!r} after {attempts} "
                f"attempt{'s' if attempts != 1 else ''} in {time.monotonic() - started:.1f} s (deadline "
                f"{self.deadline_s:g} s); last problem: {problem}"
            )
        )

    def backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter: between half and all of base * 2**attempt, capped."""
        ceiling = min(BACKOFF_CAP_S, self.backoff_base_s * 2**attempt)
        return ceiling * (0.5 + 0.5 * random.random())


def parse_retry_after(value: str | None) -> float | None:
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


def server_message(response: Any) -> str:
    """The error message in a server's response: OpenAI, vLLM and FastAPI shapes, else the text."""
    try:
        body = response.json()
    except ValueError:
        return short(response.text) or "(empty body)"
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str) and error:
            return error
        for field in ("message", "detail"):
            if body.get(field):
                return short(body[field])
    return short(body)


def short(value: Any, limit: int = 500) -> str:
    """`value` as text, cut to `limit` characters."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
