"""Every command reads its input files alike, and before any model: a byte-order mark is accepted, an empty file
is refused naming it, and a bad file is refused without loading a model (in process, models kept out of reach).

A command that goes on to a model is shown to have read and accepted its input by reaching the model: there,
`close_models` stops it with a marked error (the empty-file test shows that the input is read before that).
"""

from __future__ import annotations

import pytest

from crossknow.errors import CrossknowError
from tests.cli.command_inputs import COMMANDS, SECOND_FILES, close_models
from tests.cli.in_process import run_main, user_error

MODEL_REACHED = "a model was reached: the inputs were read"
BOM = "\ufeff"


def _stop(*_args: object, **_kwargs: object) -> None:
    raise CrossknowError(MODEL_REACHED)


def _fail(*_args: object, **_kwargs: object) -> None:
    pytest.fail("a model was reached before every input was read")


def _write_inputs(tmp_path, name: str, main_text: str) -> list[str]:
    for file_name, text in SECOND_FILES.items():
        (tmp_path / file_name).write_text(text, encoding="utf-8")
    command = COMMANDS[name]
    (tmp_path / command.file_name).write_text(main_text, encoding="utf-8")
    return command.args(tmp_path)


@pytest.mark.parametrize("name", COMMANDS)
def test_a_file_that_starts_with_a_byte_order_mark_is_read_by_every_command(tmp_path, monkeypatch, capsys, name):
    close_models(monkeypatch, _stop)
    args = _write_inputs(tmp_path, name, BOM + COMMANDS[name].text)
    finished = run_main(monkeypatch, capsys, tmp_path, *args)
    if COMMANDS[name].loads_model:
        assert finished.code == 2 and MODEL_REACHED in finished.error_line, finished
    else:
        assert finished.code == 0, finished


@pytest.mark.parametrize("text", ["", BOM + " \n\t\n"], ids=["empty", "white-space"])
@pytest.mark.parametrize("name", COMMANDS)
def test_an_empty_file_is_refused_by_every_command_before_any_model(tmp_path, monkeypatch, capsys, name, text):
    close_models(monkeypatch, _fail)
    args = _write_inputs(tmp_path, name, text)
    stderr = user_error(monkeypatch, capsys, tmp_path, *args)
    assert f"{tmp_path / COMMANDS[name].file_name}: the file is empty" in stderr
    assert not (tmp_path / "run").exists()


def test_trace_refuses_a_bad_data_file_before_loading_a_model(tmp_path, monkeypatch, capsys):
    close_models(monkeypatch, _fail)
    args = _write_inputs(tmp_path, "trace", COMMANDS["trace"].text.replace('"answer": 0', '"answer": "wet"'))
    stderr = user_error(monkeypatch, capsys, tmp_path, *args)
    assert f"{tmp_path / 'items.jsonl'}, line 1: field 'answer'" in stderr
    assert not (tmp_path / "run").exists()
