"""crossknow's command line run in the test's own process: `crossknow.cli.app.main`, as the console script calls it,
with `sys.argv` set and the output captured, without the seconds a fresh interpreter takes to start.

Tests of error paths (bad input, unknown spec, missing server or dependency) run here; the few that check the
process boundary itself (a real exit status, `python -m crossknow`) start a subprocess instead (test_cli.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from crossknow.cli import app as app_module


@dataclass(frozen=True)
class Finished:
    """How one command line ended."""

    code: int
    """The exit status (0 when the command returned)."""
    stdout: str
    stderr: str

    @property
    def error_line(self) -> str:
        """stderr on one line: rich wraps a message at the console's width."""
        return " ".join(self.stderr.split())


def run_main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
             *args: str) -> Finished:
    """Run `crossknow ARGS` in this process; a crash report would go under `tmp_path` (CROSSKNOW_CACHE)."""
    monkeypatch.setattr("sys.argv", ["crossknow", *args])
    monkeypatch.setenv("CROSSKNOW_CACHE", str(tmp_path))
    capsys.readouterr()  # what the test printed before is not the command's
    try:
        app_module.main()
        code = 0
    except SystemExit as exit_info:
        code = exit_info.code if isinstance(exit_info.code, int) else 0 if exit_info.code is None else 1
    captured = capsys.readouterr()
    return Finished(code, captured.out, captured.err)


def user_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
               *args: str) -> str:
    """Run `crossknow ARGS` in this process and assert a user error: exit status 2, one `error:` line, no
    traceback. Returns stderr on one line."""
    finished = run_main(monkeypatch, capsys, tmp_path, *args)
    assert finished.code == 2, (finished.code, finished.stdout, finished.stderr)
    assert "Traceback" not in finished.stderr + finished.stdout
    assert finished.stderr.count("error:") == 1, finished.stderr
    return finished.error_line
