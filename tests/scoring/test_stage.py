"""The one scoring stage: the work list sorted as a whole, unscorable items recorded and skipped, resume.

The scorer here is a stand-in that records what it is asked and fails on chosen requests: these tests
are about the stage's bookkeeping, which no real backend can be made to exercise on demand. The stage on
the real model is tested through evaluate and trace (tests/evaluation, tests/dynamics/test_trace.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from crossknow.data.schemas import MCItem
from crossknow.errors import CrossknowError, UnscorableRequest
from crossknow.models.protocol import ScoreResult
from crossknow.scoring.stage import ModelPoint, ScoringStage, ScoringTask, length_key
from crossknow.store.run_dir import RunDir


class RecordingScorer:
    """Scores every continuation -len(continuation); raises UnscorableRequest for continuations in `bad`
    (with the request's index unless `say_which` is False); returns NaN for continuations in `nan`."""

    name, model_id, dtype = "stand-in", "stand-in", "float32"

    def __init__(self, bad: set[str] = frozenset(), nan: set[str] = frozenset(), say_which: bool = True):
        self.bad, self.nan, self.say_which = bad, nan, say_which
        self.calls: list[list[str]] = []
        self.boundaries: set[str] = set()

    def score(self, requests, keep_token_logprobs=False):
        self.calls.append([r.context + r.continuation for r in requests])
        self.boundaries.update(r.boundary for r in requests)
        for index, request in enumerate(requests):
            if request.continuation in self.bad:
                raise UnscorableRequest(f"cannot score {request.continuation!r}", index if self.say_which else None)
        return [ScoreResult(math.nan if r.continuation in self.nan else -float(len(r.continuation)),
                            max(len(r.continuation), 1), True) for r in requests]


def item(n: int, length: int, options: tuple[str, str] = ("a", "bb")) -> MCItem:
    return MCItem(id=f"i{n}", lang="en", kind="question", prompt="q" * length, options=list(options), answer=0)


def stage(tmp_path: Path, batch_size: int = 2) -> ScoringStage:
    run = RunDir(tmp_path / "run")
    run.open({"x": 1}, {})
    return ScoringStage(run, "adaxeval", batch_size)


def test_the_whole_work_list_is_sorted_by_length_before_it_is_cut(tmp_path: Path) -> None:
    """Items arrive in a scrambled order; across all scorer calls, lengths never increase."""
    lengths = [5, 50, 20, 80, 10, 70, 30, 60, 40, 90, 15, 25, 35, 45, 55, 65, 75, 85]
    tasks = [ScoringTask(item(n, length), "s") for n, length in enumerate(lengths)]
    scorer = RecordingScorer()
    stage(tmp_path).run(scorer, tasks)
    assert len(scorer.calls) == 3  # 18 items in chunks of batch_size (2) x 4 items
    seen = [len(text) for call in scorer.calls for text in call[::2]]  # the first option of each item
    assert seen == sorted(seen, reverse=True)
    assert seen[0] == length_key(item(0, 90)) + 0  # longest first


def test_an_unscorable_item_is_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    tasks = [ScoringTask(item(n, 10 + n), "s") for n in range(5)]
    tasks.append(ScoringTask(item(9, 12, ("a", "too long")), "s"))
    scoring = stage(tmp_path)
    scoring.run(RecordingScorer(bad={"too long"}), tasks)
    scored = {row["item_id"] for row in scoring.read().to_pylist()}
    assert scored == {f"i{n}" for n in range(5)}
    [failed] = scoring.read_unscorable()
    assert failed["item_id"] == "i9" and "too long" in failed["reason"]
    # decided: a rerun asks the scorer nothing, not even the unscorable item again
    again = RecordingScorer()
    scoring.run(again, tasks)
    assert again.calls == []


def test_a_backend_that_cannot_say_which_request_failed_is_asked_one_item_at_a_time(tmp_path: Path) -> None:
    tasks = [ScoringTask(item(n, 10), "s") for n in range(3)]
    tasks.append(ScoringTask(item(7, 10, ("a", "bad")), "s"))
    scoring = stage(tmp_path)
    scoring.run(RecordingScorer(bad={"bad"}, say_which=False), tasks)
    assert {row["item_id"] for row in scoring.read().to_pylist()} == {"i0", "i1", "i2"}
    assert [row["item_id"] for row in scoring.read_unscorable()] == ["i7"]


def test_a_non_finite_loss_makes_the_item_unscorable_never_a_prediction(tmp_path: Path) -> None:
    tasks = [ScoringTask(item(0, 10), "s"), ScoringTask(item(1, 10, ("a", "overflow")), "s")]
    scoring = stage(tmp_path)
    scoring.run(RecordingScorer(nan={"overflow"}), tasks)
    assert {row["item_id"] for row in scoring.read().to_pylist()} == {"i0"}
    [failed] = scoring.read_unscorable()
    assert failed["item_id"] == "i1" and "not a finite number" in failed["reason"]


def test_rows_carry_the_checkpoint_and_the_rules_primary_loss(tmp_path: Path) -> None:
    scoring = stage(tmp_path)
    task = ScoringTask(item(0, 10, ("a", "bbbb")), "s", "memorisation")
    scoring.run(RecordingScorer(), [task], ModelPoint(3, "checkpoint-3"))
    rows = scoring.read().to_pylist()
    assert [(r["step"], r["checkpoint"], r["condition"]) for r in rows] == [(3, "checkpoint-3", "memorisation")] * 2
    # adaxeval question: continuation = the option; stand-in sum = -len, tokens = len -> mean token loss 1.0
    assert [r["loss"] for r in rows] == [pytest.approx(1.0)] * 2
    assert [(r["n_chars"], r["n_bytes"]) for r in rows] == [(1, 1), (4, 4)]
    # the same item at another checkpoint is another key: scored again
    scoring.run(RecordingScorer(), [task], ModelPoint(4, "checkpoint-4"))
    assert sorted({r["step"] for r in scoring.read().to_pylist()}) == [3, 4]


def test_the_stage_scores_under_its_boundary_and_refuses_literal_with_lm_eval(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    run.open({"x": 1}, {})
    scorer = RecordingScorer()
    ScoringStage(run, "adaxeval", 2, "literal").run(scorer, [ScoringTask(item(0, 5), "s")])
    assert scorer.boundaries == {"literal"}
    with pytest.raises(CrossknowError, match="adaxeval rule only"):
        ScoringStage(run, "lm-eval", 2, "literal")


class TableScorer:
    """Scores each continuation from a table: {continuation: logprob_sum}, one token each."""

    name, model_id = "stand-in", "stand-in"

    def __init__(self, sums: dict[str, float], dtype: str):
        self.sums, self.dtype, self.asked = sums, dtype, []

    def score(self, requests, keep_token_logprobs=False):
        self.asked += [r.continuation for r in requests]
        return [ScoreResult(self.sums[r.continuation], 1, True) for r in requests]


def test_items_that_low_precision_leaves_open_are_decided_in_float32(tmp_path: Path) -> None:
    from crossknow.scoring.refine import BF16_ERROR as E

    close, far = ("a", "b"), ("c", "d")
    low = TableScorer({"a": -1.0, "b": -1.0 - E / 2, "c": -1.0, "d": -1.0 - 10 * E}, "bfloat16")
    full = TableScorer({"a": -1.2, "b": -1.1, "c": -1.3, "d": -9.0}, "float32")
    tasks = [ScoringTask(item(0, 10, close), "s"), ScoringTask(item(1, 11, far), "s")]
    scoring = stage(tmp_path)
    scoring.run(low, tasks, float32=lambda: full)
    rows = {(r["item_id"], r["option_index"]): r["logprob_sum"] for r in scoring.read().to_pylist()}
    assert rows == {("i0", 0): -1.2, ("i0", 1): -1.1, ("i1", 0): -1.0, ("i1", 1): -1.0 - 10 * E}
    assert full.asked == ["a", "b"]  # only the open item
    assert scoring.rescored_count() == 1
    scoring.run(low, tasks, float32=lambda: full)  # resumed: nothing asked, nothing counted twice
    assert full.asked == ["a", "b"] and scoring.rescored_count() == 1
