"""A request's overall deadline in the OpenAI-compatible transport, against real loopback servers."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from crossknow.errors import CrossknowError
from crossknow.models.openai_http import DEFAULT_DEADLINE_S, OpenAIEndpoint, RequestGaveUp

from ..fault_proxy import FaultProxy

pytest.importorskip("httpx")


class AlwaysBusy:
    """A loopback server that answers every POST with 503 and `Retry-After: {retry_after}`."""

    def __init__(self, retry_after: str):
        self.requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server API)
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.requests += 1
                body = json.dumps({"error": {"message": "overloaded, come back later"}}).encode()
                self.send_response(503)
                self.send_header("Retry-After", retry_after)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> AlwaysBusy:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _endpoint(base_url: str, **settings) -> OpenAIEndpoint:
    options = {"concurrency": 1, "timeout_s": 30.0, "max_retries": 1000, "backoff_base_s": 0.05} | settings
    return OpenAIEndpoint(
        "m", base_url, "completions", api_key_env="CROSSKNOW_TEST_NO_KEY", logger=logging.getLogger("test"), **options
    )


def _post(endpoint: OpenAIEndpoint) -> dict:
    async def go() -> dict:
        async with endpoint.client() as client:
            return await endpoint.post(client, {"model": "m", "prompt": "x"})

    return asyncio.run(go())


def test_retries_stop_at_the_deadline_with_the_attempts_and_the_last_problem():
    """503s without Retry-After, retried with backoff 0.05, 0.1, 0.2 ... s: 1000 retries would take
    hours (each wait capped at 30 s); the deadline ends it."""
    with FaultProxy(upstream_port=9, script=["503"] * 1000) as proxy:
        endpoint = _endpoint(proxy.base_url, deadline_s=1.5)
        started = time.monotonic()
        with pytest.raises(RequestGaveUp) as error:
            _post(endpoint)
        elapsed = time.monotonic() - started
    assert elapsed < 1.5 + 0.5
    attempts = len(proxy.seen)
    assert attempts >= 3
    message = str(error.value)
    assert f"after {attempts} attempts" in message and "deadline 1.5 s" in message
    assert "last problem: HTTP 503" in message


def test_a_retry_after_past_the_deadline_is_not_waited_for():
    """A server asking for 120 s before the next try: the old transport slept 120 s (up to 300 s)."""
    with AlwaysBusy(retry_after="120") as server:
        endpoint = _endpoint(server.base_url, deadline_s=2.0)
        started = time.monotonic()
        with pytest.raises(RequestGaveUp, match=r"after 1 attempt in .* last problem: HTTP 503: overloaded"):
            _post(endpoint)
        assert time.monotonic() - started < 1.0  # gave up at once: waiting could not help
        assert server.requests == 1


def test_an_attempt_still_running_at_the_deadline_is_cut_off():
    """A server that never answers, with a per-read timeout longer than the deadline."""
    with FaultProxy(upstream_port=9, script=["hang"], hang_s=10.0) as proxy:
        endpoint = _endpoint(proxy.base_url, timeout_s=30.0, deadline_s=1.0)
        started = time.monotonic()
        with pytest.raises(RequestGaveUp, match="attempt 1 had no answer when the deadline came"):
            _post(endpoint)
        assert time.monotonic() - started < 1.0 + 0.5


def test_a_request_that_succeeds_within_the_deadline_returns_its_answer():
    with FaultProxy(upstream_port=9, script=["503", "429", ("status", 200, {"ok": True})]) as proxy:
        assert _post(_endpoint(proxy.base_url, deadline_s=10.0)) == {"ok": True}
    assert len(proxy.seen) == 3


def test_the_deadline_has_a_default_and_must_be_positive():
    assert _endpoint("http://127.0.0.1:9/v1").deadline_s == DEFAULT_DEADLINE_S == 300.0
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(CrossknowError, match="deadline_s"):
            _endpoint("http://127.0.0.1:9/v1", deadline_s=bad)
