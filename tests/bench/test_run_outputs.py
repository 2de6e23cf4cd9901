"""Reading and comparing the benchmarked commands' outputs (bench/run_outputs.py)."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from run_outputs import compare, crossknow_unscorable, lm_eval_scores, predictions  # noqa: E402


def test_lm_eval_samples_are_read_per_document_and_choice(tmp_path):
    # The shape lm-eval 0.4 logs with --log_samples: one response list per choice, values as strings.
    sample = {"doc": {"id": "cloze:1"}, "resps": [[["-4.5", "False"]], [["-1.25", "True"]]]}
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "samples_task_space_2026.jsonl").write_text(json.dumps(sample) + "\n")
    assert lm_eval_scores(tmp_path) == {("cloze:1", 0): (-4.5, False), ("cloze:1", 1): (-1.25, True)}
    with pytest.raises(SystemExit, match="no samples"):
        lm_eval_scores(tmp_path / "empty")


def test_predictions_break_ties_by_the_lower_index():
    scores = {("a", 0): (-2.0, False), ("a", 1): (-1.0, False), ("b", 0): (-3.0, False), ("b", 1): (-3.0, False)}
    assert predictions(scores) == {"a": 1, "b": 0}


def test_compare_reports_the_largest_difference_and_refuses_other_options():
    ours = {("a", 0): (-2.0, False), ("a", 1): (-1.0, True)}
    theirs = {("a", 0): (-2.0004, False), ("a", 1): (-2.5, False)}
    figures = compare(ours, theirs)
    assert figures["max_abs_logprob_diff"] == pytest.approx(1.5)
    assert figures["greedy_agree"] == 0.5 and figures["prediction_agree"] == 0.0
    with pytest.raises(SystemExit, match="different options"):
        compare(ours, {("a", 0): (-2.0, False)})


def test_the_tolerance_grows_with_the_sum():
    """The release sample's worst option: |diff| 3.2e-3 on a sum of -463 is within 1e-3 + 1e-5 |sum|."""
    ours, theirs = {("a", 0): (-463.48506, False)}, {("a", 0): (-463.48184, False)}
    assert compare(ours, theirs)["max_tolerance_fraction"] == pytest.approx(0.00322 / 0.0056318, rel=1e-3)
    assert compare({("a", 0): (-1.0, False)}, {("a", 0): (-1.0021, False)})["max_tolerance_fraction"] > 2


def test_unscorable_items_are_read_from_invalid_jsonl(tmp_path):
    records = [{"path": "x", "line": None, "field": None, "item_id": "cloze:1", "reason": "unscorable: merged"},
               {"path": "x", "line": 3, "field": "options", "item_id": "cloze:2", "reason": "option 1 is empty"}]
    (tmp_path / "invalid.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert crossknow_unscorable(tmp_path) == {"cloze:1"}
    assert crossknow_unscorable(tmp_path / "none") == set()
