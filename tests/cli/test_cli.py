"""The `crossknow` command line across the process boundary: exit codes, messages, nothing half-done."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from crossknow.errors import MissingDependencyError
from crossknow.models.registry import ScorerOptions, load_scorer

SAMPLE = Path(str(resources.files("crossknow") / "samples" / "sample.jsonl"))

BLOCK_HTTPX_THEN_RUN = (
    "import sys; sys.modules['httpx'] = None; "  # as if the openai extra were not installed
    "from crossknow.cli.app import main; sys.argv = ['crossknow'] + sys.argv[1:]; main()"
)


def crossknow(*args: str, cwd: Path, prelude: str | None = None) -> subprocess.CompletedProcess:
    """Run the real command line in a fresh interpreter."""
    command = [sys.executable, "-c", prelude, *args] if prelude else [sys.executable, "-m", "crossknow", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


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


@pytest.mark.parametrize(
    ("field", "mutate"),
    [
        ("answer", lambda record: record.update(answer="x")),
        ("lang", lambda record: record.pop("lang")),
    ],
    ids=["answer-not-an-index", "missing-lang"],
)
def test_malformed_jsonl_names_file_line_and_field(tmp_path, field, mutate):
    # A long directory name: the message must not be wrapped or cut where it names the file.
    data = tmp_path / ("a-directory-name-long-enough-to-push-the-message-past-eighty-columns" * 2) / "items.jsonl"
    data.parent.mkdir()
    _write_sample_with_bad_line_3(data, mutate)
    out = tmp_path / "run"
    stderr = assert_user_error(crossknow("evaluate", "--data", str(data), "--out", str(out), cwd=tmp_path))
    assert str(data) in stderr
    assert "line 3" in stderr
    assert f"'{field}'" in stderr
    assert not out.exists()


def test_missing_data_file(tmp_path):
    out = tmp_path / "run"
    missing = tmp_path / "no-such-file.jsonl"
    stderr = assert_user_error(crossknow("evaluate", "--data", str(missing), "--out", str(out), cwd=tmp_path))
    assert str(missing) in stderr and "not found" in stderr
    assert not out.exists()


def test_limit_zero_is_refused(tmp_path):
    out = tmp_path / "run"
    result = crossknow("evaluate", "--data", "sample", "--limit", "0", "--out", str(out), cwd=tmp_path)
    stderr = assert_user_error(result)
    assert "--limit" in stderr and "1" in stderr
    assert not out.exists()


def test_unknown_model_spec_lists_the_valid_forms(tmp_path):
    out = tmp_path / "run"
    stderr = assert_user_error(
        crossknow("evaluate", "--data", "sample", "--model", "gemma-270m", "--out", str(out), cwd=tmp_path)
    )
    assert "gemma-270m" in stderr
    # Printed verbatim: square brackets are not swallowed as console markup.
    for form in ("default", "hf:PATH_OR_ID[@REVISION]", "gguf:FILE", "openai:MODEL"):
        assert form in stderr
    assert_nothing_half_done(out)


def test_openai_without_base_url(tmp_path):
    out = tmp_path / "run"
    stderr = assert_user_error(
        crossknow("evaluate", "--data", "sample", "--model", "openai:gpt-x", "--out", str(out), cwd=tmp_path)
    )
    assert "--base-url" in stderr
    assert_nothing_half_done(out)


def test_missing_optional_dependency_gives_the_install_hint(monkeypatch):
    """The openai backend imports httpx only when built: without it, the error says what to install."""
    monkeypatch.setitem(sys.modules, "httpx", None)  # `import httpx` now raises ImportError
    with pytest.raises(MissingDependencyError) as error:
        load_scorer("openai:m", ScorerOptions(base_url="http://127.0.0.1:9"))
    assert "pip install 'crossknow[openai]'" in str(error.value)
    assert "httpx" in str(error.value)


def test_missing_optional_dependency_from_the_command_line(tmp_path):
    out = tmp_path / "run"
    result = crossknow(
        "evaluate", "--data", "sample", "--model", "openai:m", "--base-url", "http://127.0.0.1:9",
        "--out", str(out), cwd=tmp_path, prelude=BLOCK_HTTPX_THEN_RUN,
    )
    stderr = assert_user_error(result)
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
