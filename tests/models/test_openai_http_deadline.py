"""A request's overall deadline in the OpenAI-compatible transport, against real loopback servers."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from types import SimpleNamespace

import pytest

from crossknow.errors import CrossknowError
from crossknow.models import openai_http
from crossknow.models.openai_http import DEFAULT_DEADLINE_S, OpenAIEndpoint, RequestGaveUp

from ..fault_proxy import FaultProxy
from ..loopback import LoopbackServer, QuietHandler

pytest.importorskip("httpx")


class AlwaysBusy(LoopbackServer):
    """A loopback server that answers every POST with 503 and `Retry-After: {retry_after}`."""

    def __init__(self, retry_after: str):
        self.requests = 0
        outer = self

        class Handler(QuietHandler):
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

        super().__init__(Handler)
        self.base_url = self.root + "v1"


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


def test_retries_stop_at_the_deadline_with_the_attempts_and_the_last_problem(monkeypatch):
    """503s without Retry-After: 1000 retries would take hours (each wait capped at 30 s); the deadline ends them.
    With the jitter at its top, the waits are 0.25, 0.5, 1.0, 2.0 s: attempts 1-4 end by 1.75 s plus four round
    trips, and the wait after the fourth would end at 3.75 s, past the 3 s deadline, so the request gives up after
    exactly four attempts (unless one loopback round trip takes 0.3 s). The clock bound is ten deadlines."""
    monkeypatch.setattr(openai_http, "random", SimpleNamespace(random=lambda: 1.0))
    with FaultProxy(upstream_port=9, script=["503"] * 1000) as proxy:
        endpoint = _endpoint(proxy.base_url, deadline_s=3.0, backoff_base_s=0.25)
        assert [endpoint.backoff(attempt) for attempt in range(4)] == [0.25, 0.5, 1.0, 2.0]
        started = time.monotonic()
        with pytest.raises(RequestGaveUp) as error:
            _post(endpoint)
        elapsed = time.monotonic() - started
    assert elapsed < 10 * 3.0
    assert len(proxy.seen) == 4
    message = str(error.value)
    assert "after 4 attempts in " in message and "(deadline 3 s)" in message
    assert message.endswith("last problem: HTTP 503: overloaded (and the next try would begin past the deadline)")


def test_a_retry_after_past_the_deadline_is_not_waited_for():
    """A server asking for 120 s before the next try: the old transport slept 120 s (up to 300 s). Giving up at
    once (one request, the reason in the message) is the behaviour; the clock only has to show that the 20 s
    deadline was not waited out, which a loaded machine cannot come near."""
    with AlwaysBusy(retry_after="120") as server:
        endpoint = _endpoint(server.base_url, deadline_s=20.0)
        started = time.monotonic()
        with pytest.raises(RequestGaveUp, match=r"after 1 attempt in .* last problem: HTTP 503: overloaded, come back "
                           r"later \(and the next try would begin past the deadline\)"):
            _post(endpoint)
        assert time.monotonic() - started < 20.0
        assert server.requests == 1


def test_an_attempt_still_running_at_the_deadline_is_cut_off():
    """A server that never answers (for 60 s), with a per-read timeout of 120 s: the message says the deadline cut
    the attempt, not the read timeout nor the server; the clock bound is ten deadlines, well short of 60 s."""
    with FaultProxy(upstream_port=9, script=["hang"], hang_s=60.0) as proxy:
        endpoint = _endpoint(proxy.base_url, timeout_s=120.0, deadline_s=1.0)
        started = time.monotonic()
        with pytest.raises(RequestGaveUp, match="after 1 attempt in .*; last problem: attempt 1 had no answer when "
                           "the deadline came"):
            _post(endpoint)
        assert time.monotonic() - started < 10 * 1.0
    assert len(proxy.seen) == 1


def test_a_request_that_succeeds_within_the_deadline_returns_its_answer():
    with FaultProxy(upstream_port=9, script=["503", "429", ("status", 200, {"ok": True})]) as proxy:
        assert _post(_endpoint(proxy.base_url, deadline_s=10.0)) == {"ok": True}
    assert len(proxy.seen) == 3


def test_the_deadline_has_a_default_and_must_be_positive():
    assert _endpoint("http://127.0.0.1:9/v1").deadline_s == DEFAULT_DEADLINE_S == 300.0
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(CrossknowError, match="deadline_s"):
            _endpoint("http://127.0.0.1:9/v1", deadline_s=bad)
