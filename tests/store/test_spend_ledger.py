"""The spend ledger of a run directory: every invocation's rows kept, each request counted once by its cache key,
a request without a key counted every time, a torn last shard of a killed writer dropped."""

from __future__ import annotations

from crossknow.store.spend_ledger import SPEND_DIR, Paid, SpendLedger, SpendTotal


def test_the_whole_run_counts_each_request_once_over_invocations(tmp_path):
    first = SpendLedger(tmp_path)
    with first.during("prefilter"):
        first.record("simulation", [Paid("k1", 10, 2, 0.5), Paid(None, 0, 0, 0.0)])  # the second one failed
    with first.during("search"):
        first.record("proxy", [Paid("k2", 20, 4, 1.0)])
    # killed after recording k3 and before caching its answer: the next invocation sends it again
    first.record("proxy", [Paid("k3", 30, 6, 2.0)])
    second = SpendLedger(tmp_path)
    assert second.invocation != first.invocation
    second.record("proxy", [Paid("k3", 30, 6, 2.0), Paid(None, 0, 0, 0.0), Paid("k4", 40, 8, 4.0)])
    assert second.total() == SpendTotal(calls=6, prompt_tokens=100, completion_tokens=20, cost_usd=7.5)
    assert second.total("prefilter") == SpendTotal(2, 10, 2, 0.5)
    assert second.total(labels=["proxy"]) == SpendTotal(4, 90, 18, 7.0)
    assert second.total("search", ["simulation"]) == SpendTotal()
    # what each invocation sent, repeats included
    assert second.sent() == SpendTotal(3, 70, 14, 6.0)
    assert second.sent(first.invocation) == SpendTotal(4, 60, 12, 3.5)
    assert first.stage == "" and second.total().tokens == 120


def test_a_shard_torn_by_a_kill_is_dropped_and_the_next_write_goes_on(tmp_path):
    ledger = SpendLedger(tmp_path)
    ledger.record("proxy", [Paid("a", 1, 1, 0.0)])
    ledger.record("proxy", [Paid("b", 2, 2, 0.0)])
    manifest = tmp_path / SPEND_DIR / "manifest.json"
    manifest.write_bytes(manifest.read_bytes()[:-12])  # the second shard's line cut mid-way
    resumed = SpendLedger(tmp_path)
    assert resumed.total() == SpendTotal(1, 1, 1, 0.0)
    resumed.record("proxy", [Paid("b", 2, 2, 0.0)])
    assert resumed.total() == SpendTotal(2, 3, 3, 0.0)
    assert SpendLedger(tmp_path / "elsewhere").total() == SpendTotal()  # no ledger yet: nothing spent
