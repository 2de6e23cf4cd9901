"""`crossknow report --run DIR`: rebuilds the report of a trace run directory."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from crossknow.cli.app import app
from crossknow.report.run_report import rebuild_report
from tests.cli.in_process import user_error
from tests.report.parse import parse_report
from tests.report.test_report import run_trace, train_log


def test_rebuilds_report_with_meta_and_training_log(tmp_path):
    run_trace().to_parquet(tmp_path / "trace.parquet")
    train_log().to_parquet(tmp_path / "train_log.parquet")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"model": "hf:some/model", "seed": 3}), encoding="utf-8")
    (tmp_path / "inputs.json").write_text(json.dumps({"data.jsonl": "sha256:0123"}), encoding="utf-8")
    result = CliRunner().invoke(app, ["report", "--run", str(tmp_path), "--first-step", "100"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(tmp_path / "report.html")
    report = parse_report((tmp_path / "report.html").read_text(encoding="utf-8"))
    meta = {row[0]: row[1] for row in report.tables["table-meta"].rows}
    assert meta["model"] == "hf:some/model"
    assert json.loads(meta["config"]) == {"model": "hf:some/model", "seed": 3}
    assert json.loads(meta["inputs"]) == {"data.jsonl": "sha256:0123"}
    assert "fig-train-loss" in report.figures
    assert json.loads((tmp_path / "dynamics.json").read_text(encoding="utf-8"))["first_step"] == 100


def test_out_elsewhere_and_no_training_log(tmp_path):
    run_trace().to_parquet(tmp_path / "trace.parquet")
    path = rebuild_report(tmp_path, out=tmp_path / "copy")
    assert path == tmp_path / "copy" / "report.html"
    assert "fig-train-loss" not in parse_report(path.read_text(encoding="utf-8")).figures
    assert not (tmp_path / "report.html").exists()


def test_directory_without_trace_is_a_clear_error(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    run.mkdir()
    stderr = user_error(monkeypatch, capsys, tmp_path, "report", "--run", str(run))
    assert f"{run} has no trace.parquet" in stderr
    assert list(run.iterdir()) == []
