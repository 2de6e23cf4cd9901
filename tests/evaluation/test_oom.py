"""Out-of-memory halving in the local scorer: a batch that does not fit is retried in halves,
and the numbers do not change."""

from __future__ import annotations

import pytest
import torch

from crossknow.errors import CrossknowError
from crossknow.models.protocol import ScoreRequest

SUBJECTS = ("France", "Japan", "Italy", "Kenya", "Peru", "Norway", "Egypt", "Canada")
REQUESTS = [
    ScoreRequest(f"Fact {n}: the capital of {country} is", f" city number {n}.")
    for n, country in enumerate(SUBJECTS)
]


@pytest.fixture
def scorer_at_batch_8(embedded_scorer, monkeypatch):
    """The shared embedded scorer with batch_size 8, restored afterwards."""
    monkeypatch.setattr(embedded_scorer, "batch_size", 8)
    return embedded_scorer


def _fail_above(scorer, monkeypatch, max_groups: int, after_work: bool) -> list[tuple[int, bool]]:
    """Patch `scorer._score_groups` to raise OutOfMemoryError on batches of more than `max_groups`
    groups (before running them, or after running them when `after_work`, as a real OOM midway
    would leave partial results behind). Returns the log of (groups, succeeded) per call."""
    original = scorer._score_groups
    calls: list[tuple[int, bool]] = []

    def patched(groups, token_logprobs, greedy):
        too_big = len(groups) > max_groups
        if too_big and not after_work:
            calls.append((len(groups), False))
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        original(groups, token_logprobs, greedy)
        calls.append((len(groups), not too_big))
        if too_big:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")

    monkeypatch.setattr(scorer, "_score_groups", patched)
    return calls


@pytest.mark.parametrize("after_work", [False, True], ids=["oom-before-work", "oom-after-partial-work"])
def test_oom_halves_the_batch_and_keeps_the_numbers(scorer_at_batch_8, monkeypatch, after_work):
    scorer = scorer_at_batch_8
    assert len({r.context for r in REQUESTS}) == 8  # 8 groups: one per distinct context
    reference = scorer.score(REQUESTS, keep_token_logprobs=True)

    calls = _fail_above(scorer, monkeypatch, max_groups=2, after_work=after_work)
    results = scorer.score(REQUESTS, keep_token_logprobs=True)

    assert calls[0] == (8, False), "the first attempt must be the full batch, and fail"
    succeeded = [size for size, ok in calls if ok]
    assert succeeded and max(succeeded) <= 2
    assert sum(succeeded) == 8  # every group scored exactly once by a successful call
    assert [size for size, ok in calls if not ok] == [8, 4]  # halved: 8 -> 4 -> 2

    assert len(results) == len(reference)
    for got, want in zip(results, reference, strict=True):
        assert got.n_tokens == want.n_tokens
        assert got.greedy == want.greedy
        # float32 tolerance: batches of 2 and of 8 pad the contexts differently (a sum of ~18 nats
        # moved by 1.3e-5 when measured), so relative 1e-6 on top of absolute 1e-5.
        assert got.logprob_sum == pytest.approx(want.logprob_sum, rel=1e-6, abs=1e-5)
        assert got.token_logprobs == pytest.approx(want.token_logprobs, rel=1e-6, abs=1e-5)
    assert scorer.batch_size == 8  # halving is per call, not a permanent change


def test_oom_with_a_batch_of_one_is_a_clear_error(scorer_at_batch_8, monkeypatch):
    calls = _fail_above(scorer_at_batch_8, monkeypatch, max_groups=0, after_work=False)
    with pytest.raises(CrossknowError, match="out of memory"):
        scorer_at_batch_8.score(REQUESTS[:3])
    # Sizes 8 and 4 both hold all 3 groups; then 2, then 1, which gives up.
    assert [size for size, _ in calls] == [3, 3, 2, 1]
