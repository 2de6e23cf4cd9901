"""environment.json: each run directory records what ran it, one entry per distinct environment."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

import pytest

from crossknow.errors import CrossknowError
from crossknow.store import environment
from crossknow.store.environment import ENVIRONMENT_FILE, current_environment, read_environments
from crossknow.store.run_dir import RunDir

CHECKOUT = Path(__file__).resolve().parents[2]


def test_the_entry_names_versions_commit_python_and_cpu_as_this_machine_reports_them():
    entry = current_environment()
    assert entry["packages"]["torch"] == metadata.version("torch")
    assert entry["packages"]["transformers"] == metadata.version("transformers")
    assert entry["python"] == platform.python_version()
    assert entry["cpu_threads"] == len(os.sched_getaffinity(0)) and entry["cpu"]
    if Path(environment.__file__).resolve().is_relative_to(CHECKOUT / "src"):  # crossknow runs from this checkout
        head = subprocess.run(["git", "-C", str(CHECKOUT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        assert entry["git_commit"] in (head, head + "+dirty")
    assert json.loads(json.dumps(entry)) == entry  # all of it JSON


def test_a_run_records_one_entry_per_environment_it_ran_in(tmp_path, monkeypatch):
    with RunDir(tmp_path) as run:
        run.open({"seed": 0}, {})
    with RunDir(tmp_path) as run:  # resumed on the same machine: nothing new
        run.open({"seed": 0}, {})
    [first] = read_environments(tmp_path)
    assert first["python"] == platform.python_version() and first["first_seen"]

    elsewhere = current_environment() | {"cpu": "another CPU", "gpus": [{"name": "NVIDIA H100", "driver": "550.1"}]}
    monkeypatch.setattr(environment, "current_environment", lambda: elsewhere)
    with RunDir(tmp_path) as run:
        run.open({"seed": 0}, {})
    entries = read_environments(tmp_path)
    assert [e["cpu"] for e in entries] == [first["cpu"], "another CPU"] and entries[1]["gpus"][0]["driver"] == "550.1"


def test_a_run_refused_for_another_config_records_nothing(tmp_path):
    with RunDir(tmp_path) as run:
        run.open({"seed": 0}, {}, has_results=True)
    (tmp_path / ENVIRONMENT_FILE).unlink()
    with RunDir(tmp_path) as run, pytest.raises(CrossknowError, match="another config"):
        run.open({"seed": 1}, {}, has_results=True)
    assert not (tmp_path / ENVIRONMENT_FILE).exists()


@pytest.mark.parametrize("text", ['{"python": "3.11"}', "[1]", "not json"])
def test_a_file_that_is_no_environment_file_is_refused_by_name(tmp_path, text):
    (tmp_path / ENVIRONMENT_FILE).write_text(text, encoding="utf-8")
    with pytest.raises(CrossknowError, match=ENVIRONMENT_FILE):
        read_environments(tmp_path)
