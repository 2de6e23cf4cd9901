"""`crossknow.trace(checkpoints, items)` from Python: the command's sweep, its table back as a DataFrame, and no
run directory unless one is asked for."""

from __future__ import annotations

import json

import pandas as pd

import crossknow
from crossknow.dynamics.trace import run_trace
from crossknow.dynamics.trace_config import TraceConfig
from tests.training.tiny_run import write_items


def test_a_trace_from_python_equals_the_commands_and_writes_nothing_unasked(random_train_run, tmp_path,
                                                                            monkeypatch):
    items = write_items(tmp_path / "items.jsonl", 6)
    records = [json.loads(line) for line in items.read_text(encoding="utf-8").splitlines()]
    settings = {"train_lang": "en", "device": "cpu", "batch_size": 4}
    monkeypatch.chdir(tmp_path)
    frame = crossknow.trace(random_train_run.out, records, **settings)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["items.jsonl"]
    command = run_trace(TraceConfig(checkpoints=[str(random_train_run.out)], data=[str(items)], **settings),
                        tmp_path / "command")
    pd.testing.assert_frame_equal(frame, command.to_pandas())
    assert sorted(frame["step"].unique()) == [0, 2, 4] and len(frame) == 3 * 6 * 4
    kept = crossknow.trace([random_train_run.out], items, out=tmp_path / "kept", **settings)
    pd.testing.assert_frame_equal(kept, frame)
    assert (tmp_path / "kept" / "trace.parquet").is_file() or (tmp_path / "kept" / "config.yaml").is_file()
