"""An unexpected internal error: one line naming the versions and a report file, or the traceback on request."""

from __future__ import annotations

import os

import pytest
import typer
from typer.testing import CliRunner

from crossknow.cli import app as app_module
from crossknow.cli.crash import DEBUG_VARIABLE


@pytest.fixture
def crashing_app(monkeypatch, tmp_path):
    """`main` in front of an app whose one command fails inside, with the cache (and so the reports) in tmp_path."""
    broken = typer.Typer()

    @broken.callback()
    def root() -> None:
        """A group, as crossknow's app is."""

    @broken.command()
    def fail() -> None:
        raise RuntimeError("The size of tensor a (30) must match the size of tensor b (10)")

    monkeypatch.setattr(app_module, "app", broken)
    monkeypatch.setattr("sys.argv", ["crossknow", "fail"])
    monkeypatch.setenv("CROSSKNOW_CACHE", str(tmp_path))
    monkeypatch.setenv(DEBUG_VARIABLE, "0")  # set, not deleted: monkeypatch then undoes any later change
    return tmp_path


def test_an_internal_error_prints_one_line_with_versions_and_the_traceback_file(crashing_app, capsys):
    with pytest.raises(SystemExit) as exit_info:
        app_module.main()
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    line = " ".join(err.split())  # rich wraps the line at the terminal's width
    assert "RuntimeError: The size of tensor a (30)" in line
    for package in ("crossknow 0.1.0", "torch ", "transformers "):
        assert package in line
    reports = list((crashing_app / "crashes").glob("crash-*.txt"))
    assert len(reports) == 1 and reports[0].name in line.replace(" ", "")
    text = reports[0].read_text()
    assert "Traceback (most recent call last)" in text and "raise RuntimeError" in text
    assert "command: crossknow fail" in text


def test_debug_shows_the_traceback_instead(crashing_app, monkeypatch):
    monkeypatch.setenv(DEBUG_VARIABLE, "1")
    with pytest.raises(RuntimeError, match="size of tensor"):
        app_module.main()
    assert not (crashing_app / "crashes").exists()


def test_the_debug_flag_sets_the_variable(monkeypatch):
    monkeypatch.setenv(DEBUG_VARIABLE, "0")
    result = CliRunner().invoke(app_module.app, ["--debug", "evaluate", "--help"])
    assert result.exit_code == 0, result.output
    assert os.environ.get(DEBUG_VARIABLE) == "1"
