"""Reading and comparing the benchmarked commands' outputs (bench/run_outputs.py)."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from run_outputs import compare, lm_eval_scores, predictions  # noqa: E402


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
