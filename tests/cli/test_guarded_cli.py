"""Malformed input files at the command line: one `error:` line naming the file, exit status 2, no traceback."""

from __future__ import annotations

import json

import pytest

from crossknow.cli import app as app_module

DEEP = "[" * 100_000 + "]" * 100_000
ITEM = {"id": "q1", "lang": "en", "kind": "question", "prompt": "Q?", "options": ["a", "b"], "answer": 0}
JUDGEMENT = {"q_id": "q1", "source_lang": "en", "target_lang": "en", "correct": True}


def run_main(monkeypatch, capsys, tmp_path, *args: str) -> str:
    """Run crossknow's entry point in this process; assert a user error and return stderr on one line."""
    monkeypatch.setattr("sys.argv", ["crossknow", *args])
    monkeypatch.setenv("CROSSKNOW_CACHE", str(tmp_path))  # where a crash report would go
    with pytest.raises(SystemExit) as exit_info:
        app_module.main()
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    assert captured.err.count("error:") == 1
    return " ".join(captured.err.split())  # rich wraps the line at the terminal's width


@pytest.mark.parametrize(
    ("record", "command"),
    [(ITEM, ["evaluate", "--data"]), (JUDGEMENT, ["eclektic", "score", "--judgements"])],
    ids=["evaluate", "eclektic-score"],
)
def test_a_deeply_nested_value_is_one_error_line(tmp_path, monkeypatch, capsys, record, command):
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps(record) + "\n" + json.dumps(record)[:-1] + f', "extra": {DEEP}}}\n', encoding="utf-8")
    out = tmp_path / "out"
    stderr = run_main(monkeypatch, capsys, tmp_path, *command, str(path), "--out", str(out))
    assert f"error: {path}, line 2: " in stderr and "nested more than" in stderr
    assert not (out / "metrics.json").exists()
