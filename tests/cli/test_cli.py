"""The `crossknow` command line: exit codes, messages, nothing half-done.

Error paths run in this process (`tests.cli.in_process`); a real process is started where the boundary itself
is under test: the exit status and stderr of `python -m crossknow`, and the printed output of a real run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from crossknow.errors import MissingDependencyError
from crossknow.models.registry import ModelOptions, load_scorer
from tests.cli.in_process import user_error

SAMPLE = Path(str(resources.files("crossknow") / "samples" / "sample.jsonl"))


def crossknow(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run the real command line in a fresh interpreter."""
    return subprocess.run([sys.executable, "-m", "crossknow", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def assert_user_error(result: subprocess.CompletedProcess) -> str:
    """Exit status 2, one message on stderr, no traceback; returns stderr."""
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    assert "error:" in result.stderr
    return result.stderr


def assert_nothing_half_done(out: Path) -> None:
    assert not (out / "scores.parquet").exists()
    assert not (out / "metrics.json").exists()
    assert not (out / "stages").exists()


def _write_sample_with_bad_line_3(path: Path, mutate) -> None:
    records = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()[:5]]
    mutate(records[2])
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def _long_named_items(tmp_path: Path, mutate) -> Path:
    """The sample's first 5 items with line 3 changed, under a directory name long enough to push the message past
    eighty columns (it must not be wrapped or cut where it names the file)."""
    data = tmp_path / ("a-directory-name-long-enough-to-push-the-message-past-eighty-columns" * 2) / "items.jsonl"
    data.parent.mkdir()
    _write_sample_with_bad_line_3(data, mutate)
    return data


def test_a_real_process_exits_2_with_the_message_whole_on_stderr(tmp_path):
    data = _long_named_items(tmp_path, lambda record: record.pop("lang"))
    out = tmp_path / "run"
    stderr = assert_user_error(crossknow("evaluate", "--data", str(data), "--out", str(out), cwd=tmp_path))
    assert f"{data}, line 3: field 'lang'" in stderr and stderr.count("error:") == 1
    assert not out.exists()


@pytest.mark.parametrize(
    ("field", "mutate"),
    [
        ("answer", lambda record: record.update(answer="x")),
        ("lang", lambda record: record.pop("lang")),
    ],
    ids=["answer-not-an-index", "missing-lang"],
)
def test_malformed_jsonl_names_file_line_and_field(tmp_path, monkeypatch, capsys, field, mutate):
    data = _long_named_items(tmp_path, mutate)
    out = tmp_path / "run"
    stderr = user_error(monkeypatch, capsys, tmp_path, "evaluate", "--data", str(data), "--out", str(out))
    assert f"{data}, line 3: field '{field}'" in stderr
    assert not out.exists()


def test_missing_data_file(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    missing = tmp_path / "no-such-file.jsonl"
    stderr = user_error(monkeypatch, capsys, tmp_path, "evaluate", "--data", str(missing), "--out", str(out))
    assert str(missing) in stderr and "not found" in stderr
    assert not out.exists()


def test_limit_zero_is_refused(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    stderr = user_error(monkeypatch, capsys, tmp_path, "evaluate", "--data", "sample", "--limit", "0", "--out",
                        str(out))
    assert "--limit" in stderr and "1" in stderr
    assert not out.exists()


def test_unknown_model_spec_lists_the_valid_forms(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    stderr = user_error(monkeypatch, capsys, tmp_path, "evaluate", "--data", "sample", "--model", "gemma-270m",
                        "--out", str(out))
    assert "gemma-270m" in stderr
    # Printed verbatim: square brackets are not swallowed as console markup.
    for form in ("default", "hf:PATH_OR_ID[@REVISION]", "gguf:FILE", "openai:MODEL"):
        assert form in stderr
    assert_nothing_half_done(out)


def test_openai_without_base_url(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    stderr = user_error(monkeypatch, capsys, tmp_path, "evaluate", "--data", "sample", "--model", "openai:gpt-x",
                        "--out", str(out))
    assert "--base-url" in stderr
    assert_nothing_half_done(out)


def test_missing_optional_dependency_gives_the_install_hint(monkeypatch):
    """The openai backend imports httpx only when built: without it, the error says what to install."""
    monkeypatch.setitem(sys.modules, "httpx", None)  # `import httpx` now raises ImportError
    with pytest.raises(MissingDependencyError) as error:
        load_scorer("openai:m", ModelOptions(base_url="http://127.0.0.1:9"))
    assert "pip install 'crossknow[openai]'" in str(error.value)
    assert "httpx" in str(error.value)


def test_missing_optional_dependency_from_the_command_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "httpx", None)  # as if the openai extra were not installed
    out = tmp_path / "run"
    stderr = user_error(monkeypatch, capsys, tmp_path, "evaluate", "--data", "sample", "--model", "openai:m",
                        "--base-url", "http://127.0.0.1:9", "--out", str(out))
    assert "pip install 'crossknow[openai]'" in stderr
    assert_nothing_half_done(out)


@pytest.mark.slow
def test_evaluate_sample_prints_the_table(tmp_path):
    out = tmp_path / "run"
    result = crossknow(
        "evaluate", "--data", "sample", "--limit", "4", "--device", "cpu", "--out", str(out), cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    # crossknow's own progress bar only: transformers' weight-loading bar and advice are silenced
    assert "Loading weights" not in result.stderr and "Warning" not in result.stderr
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if line.count("│") >= 3}
    # The first 4 sample items: one fact, en/ja x cloze/question.
    assert set(rows) >= {"all", "lang=en", "lang=ja", "kind=cloze", "kind=question"}
    assert rows["all"].split("│")[2].strip() == "4"
    assert rows["lang=en"].split("│")[2].strip() == "2"
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["n_items"]["all"] == 4
    # The printed accuracy of the rule's own normalisation (mean_token, bold) is metrics.json's.
    assert rows["all"].split("│")[3].strip() == f"{metrics['accuracy']['mean_token']['all']:.3f}"
    assert (out / "scores.parquet").exists()
    [ran_in] = json.loads((out / "environment.json").read_text(encoding="utf-8"))  # what computed these numbers
    assert ran_in["packages"]["torch"] and ran_in["python"] and ran_in["cpu_threads"] >= 1
