"""`crossknow train` and `crossknow trace`: user errors (in process), and a trace end to end across the process
boundary."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.cli.in_process import user_error
from tests.training.tiny_run import TinyTraceRun, TinyTrainRun, write_items, write_tiny_corpus


def crossknow(*args: str, cwd: Path, timeout: int = 400) -> subprocess.CompletedProcess:
    """Run the real command line in a fresh interpreter."""
    return subprocess.run([sys.executable, "-m", "crossknow", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def test_train_with_a_bad_train_layers_spec_stops_before_writing_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_tiny_corpus(tmp_path / "corpus.jsonl")
    out = tmp_path / "run"
    line = user_error(monkeypatch, capsys, tmp_path, "train", "--corpus", str(corpus), "--out", str(out),
                      "--train-layers", "last:x", "--device", "cpu")
    assert "--train-layers" in line and "last:x" in line
    assert not out.exists()


def test_train_with_the_instruction_recipe_and_no_question_answer_generator_stops_before_writing_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The instruction recipe's question-answer half (Appendix A.4.1(2)) needs a generator; the error says how
    to leave that half out."""
    corpus = write_tiny_corpus(tmp_path / "corpus.jsonl")
    out = tmp_path / "run"
    line = user_error(monkeypatch, capsys, tmp_path, "train", "--corpus", str(corpus), "--out", str(out),
                      "--recipe", "instruction", "--device", "cpu")
    assert "--qa-generator" in line and "--qa-pairs 0" in line
    assert not out.exists()


def test_trace_with_a_missing_data_file_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    missing = tmp_path / "no-such-items.jsonl"
    line = user_error(monkeypatch, capsys, tmp_path, "trace", "--checkpoints", "default", "--data", str(missing),
                      "--out", str(out), "--device", "cpu")
    assert "--data" in line and "no-such-items.jsonl" in line
    assert not out.exists()


def expected_accuracy(trace: pd.DataFrame) -> dict[tuple[str, int], tuple[float, int]]:
    """(condition, step) -> (accuracy, items): an item is right when its answer has the lowest loss."""
    best = trace.sort_values(["loss", "option_index"]).groupby(["step", "set", "item_id"], as_index=False).first()
    grouped = best.groupby(["condition", "step"])["is_answer"]
    return {key: (float(value.mean()), int(value.size)) for key, value in grouped}


def test_trace_end_to_end_scores_the_new_checkpoint_and_writes_the_report(
    tiny_train_run: TinyTrainRun, tiny_trace_run: TinyTraceRun, tmp_path: Path
) -> None:
    """The shared trace run, as if checkpoint-4 had been saved after it ran: the command scores that checkpoint
    only, then prints the accuracy lines and the report's path."""
    run = shutil.copytree(tiny_trace_run.out, tmp_path / "run")
    stage = run / "stages" / "scores" / "manifest.json"
    shards = json.loads(stage.read_text(encoding="utf-8"))["shards"]
    kept = [shard for shard in shards if not shard["keys"][0].startswith("4\t")]
    stage.write_text(json.dumps({"shards": kept}), encoding="utf-8")
    (run / "trace.parquet").unlink()

    result = crossknow("trace", "--checkpoints", str(tiny_train_run.out), "--data", str(tiny_trace_run.items),
                       "--out", str(run), "--device", "cpu", "--batch-size", "4", cwd=tmp_path)
    assert result.returncode == 0, result.stderr

    assert len(json.loads(stage.read_text(encoding="utf-8"))["shards"]) == len(shards)
    trace = pd.read_parquet(run / "trace.parquet")
    reference = pd.read_parquet(tiny_trace_run.out / "trace.parquet")
    assert len(trace) == len(reference) == 96
    merged = trace.merge(reference, on=["step", "set", "item_id", "option_index"], suffixes=("", "_ref"))
    assert len(merged) == 96 and (merged["loss"] - merged["loss_ref"]).abs().max() < 1e-6

    printed: dict[str, tuple[float, float, int]] = {}
    for line in result.stdout.splitlines():
        match = re.match(r"^(\S+)\s+step 0: ([\d.]+)\s+->\s+step 4: ([\d.]+)\s+\((\d+) items\)$", line)
        if match:
            printed[match.group(1)] = (float(match.group(2)), float(match.group(3)), int(match.group(4)))
    accuracy = expected_accuracy(trace)
    assert set(printed) == {"memorisation", "intralingual", "interlingual", "interlingual-cloze"}
    for condition, (first, last, items) in printed.items():
        assert first == round(accuracy[(condition, 0)][0], 3)
        assert last == round(accuracy[(condition, 4)][0], 3)
        assert items == accuracy[(condition, 0)][1] == 2

    report = re.search(r"^report: (.+)$", result.stdout, flags=re.MULTILINE)
    assert report, result.stdout
    report_path = Path(report.group(1).strip())
    assert report_path.is_file() and report_path.parent == run
    assert "<html" in report_path.read_text(encoding="utf-8").lower()
    # The training loss log rides along for the report.
    assert (run / "train_log.parquet").read_bytes() == (tiny_train_run.out / "train_log.parquet").read_bytes()


def test_trace_with_other_data_on_a_finished_run_is_refused(
    tiny_train_run: TinyTrainRun, tiny_trace_run: TinyTraceRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    items = write_items(tmp_path / "items.jsonl", 4)
    run = shutil.copytree(tiny_trace_run.out, tmp_path / "run")
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    line = user_error(monkeypatch, capsys, tmp_path, "trace", "--checkpoints", str(tiny_train_run.out), "--data",
                      str(items), "--out", str(run), "--device", "cpu")
    assert "another config" in line and "data" in line
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before
