"""The suite's tiers by cost, its skip rule and its own cache (a pytest plugin, loaded by tests/conftest.py).

Tiers:
- every test is marked from the fixtures it uses: `model` (the embedded model, its checkpoint or its GGUF),
  `server` (a llama.cpp server), `training` (the shared tiny training runs). A test that loads the model
  another way carries the marker itself.
- `nightly` marks the end-to-end demos and the long server runs; `make test` (CI) runs everything else,
  `make test-fast` only what needs none of the three, `make test-nightly` the nightly tests.
- With CROSSKNOW_TEST_TIER=fast, loading the embedded model fails the test: the fast tier proves that it
  needs no model instead of assuming it.

Skips: a skipped test fails unless it is marked `gpu` (no CUDA device here) or `may_skip` (a check of a
machine kind, such as "no CUDA"): a missing ../shared, a missing package or a server that cannot start is an
error, never a silent skip.

Cache: the session's CROSSKNOW_CACHE is the checkout's own `.test-cache/` (ignored by git), never the user's
~/.cache/crossknow, so the user's files cannot decide which path a test takes.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

TIER_FIXTURES = {
    "model": {"embedded_scorer", "embedded_generator", "embedded_checkpoint_dir", "gemma_gguf", "model_tokens",
              "perturb_run_dir"},
    "server": {"llama_server_process", "llama_chat_server_process"},
    "training": {"tiny_train_run", "random_train_run"},
}
"""Which fixtures put a test in which tier (fixtures that build on these are followed: pytest's closure)."""

TEST_CACHE = Path(__file__).resolve().parents[1] / ".test-cache"
"""The suite's own crossknow cache: the converted model, the GGUF, request caches of tests that use the default."""

FAST = os.environ.get("CROSSKNOW_TEST_TIER") == "fast"
"""Whether this run is the fast tier, which must load no model."""

os.environ["CROSSKNOW_CACHE"] = str(TEST_CACHE)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with the tiers of the fixtures it uses."""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for marker, fixtures in TIER_FIXTURES.items():
            if used & fixtures:
                item.add_marker(marker)


@pytest.fixture(autouse=True, scope="session")
def _fast_tier_loads_no_model():
    """In the fast tier, make every way to the embedded model (weights or tokenizer) fail the test that takes it."""
    if not FAST:
        yield
        return
    from crossknow.models import checkpoint_cache

    def refuse(*_args, **_kwargs):
        pytest.fail("the fast tier loads no model: mark this test `model` (or give it the embedded_* fixture)")

    saved = checkpoint_cache.embedded_checkpoint, checkpoint_cache.embedded_gguf
    checkpoint_cache.embedded_checkpoint = checkpoint_cache.embedded_gguf = refuse
    yield
    checkpoint_cache.embedded_checkpoint, checkpoint_cache.embedded_gguf = saved


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Turn a skip the suite did not expect into a failure that says why it was skipped."""
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    if item.get_closest_marker("gpu") or item.get_closest_marker("may_skip"):
        return
    _fail_the_skip(report)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    """The same for a whole module skipped while it was collected (`pytest.importorskip` at its top)."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped:
        _fail_the_skip(report)


def _fail_the_skip(report: pytest.TestReport | pytest.CollectReport) -> None:
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = (
        f"unexpected skip ({reason}): every capability must run here; install crossknow[all,llamacpp,test] "
        "and keep ../shared beside the checkout, or mark the test `may_skip` if it checks another machine kind"
    )
