"""`crossknow.pitfalls.evaluate(models, pairs)` from Python: the command's evaluation of released pairs, its rows
back as a DataFrame, nothing written unless asked."""

from __future__ import annotations

import pandas as pd

import crossknow.pitfalls
from crossknow.pitfalls.eval_records import PitfallsEvalConfig
from crossknow.pitfalls.evaluation import run_pitfalls_eval
from tests.gpu.tiny_hf_model import write_tiny_model
from tests.pitfalls.test_evaluation import RELEASE


def test_an_evaluation_from_python_equals_the_commands(tmp_path, monkeypatch):
    model = f"hf:{write_tiny_model(tmp_path / 'tiny')}"
    pairs = str(RELEASE / "Japanese.json")
    monkeypatch.chdir(tmp_path)
    frame = crossknow.pitfalls.evaluate(model, pairs, limit=4, device="cpu")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["tiny"]
    metrics = run_pitfalls_eval(PitfallsEvalConfig(pairs=pairs, models=[model], limit=4, device="cpu"),
                                tmp_path / "command")
    pd.testing.assert_frame_equal(frame, pd.read_parquet(tmp_path / "command" / "pairs.parquet"))
    assert len(frame) == 4 and set(frame["model"]) == {model}
    shown = {key: value for key, value in frame.attrs["metrics"].items() if key not in ("seconds", "calls")}
    assert shown == {key: value for key, value in metrics.model_dump().items() if key not in ("seconds", "calls")}
