"""Atomic writes: permissions that follow the umask, the directory synced, a killed writer's leftovers."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import crossknow.store.atomic as atomic_module
from crossknow.store.atomic import atomic_write, atomic_write_text, remove_stale_temporaries
from crossknow.store.run_dir import RunDir


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask():
    """Set the process's umask for one test; restores it after."""
    previous = os.umask(0o022)
    os.umask(previous)
    yield os.umask
    os.umask(previous)


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002, 0o077])
def test_run_files_follow_the_umask(tmp_path, umask, mask):
    """mkstemp made every run file 0600 whatever the umask, so a group could not read a shared run."""
    umask(mask)
    run = RunDir(tmp_path / "run")
    run.open({"model": "default"}, {})
    run.stage("scores").append(pa.table({"key": ["a"]}), ["a"])
    run.close()
    expected = 0o666 & ~mask
    files = [
        tmp_path / "run" / "config.yaml",
        tmp_path / "run" / "inputs.json",
        tmp_path / "run" / "stages" / "scores" / "manifest.json",
        tmp_path / "run" / "stages" / "scores" / "shard-000000.parquet",
    ]
    assert {path.name: oct(_mode(path)) for path in files} == {path.name: oct(expected) for path in files}
    # Replacing a file gives the new file the same treatment.
    atomic_write_text(files[0], "model: other\n")
    assert _mode(files[0]) == expected


def test_atomic_write_syncs_the_directory_after_the_rename(tmp_path, monkeypatch):
    """Without a sync of the directory a power loss can forget the rename, though the data was synced.
    (No cheap real power loss: a spy on os.fsync records what was synced, in which order.)"""
    synced: list[str] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(atomic_module.os, "fsync", spy)
    atomic_write_text(tmp_path / "metrics.json", "{}\n")
    assert synced == ["file", "dir"]


def test_stale_temporaries_of_a_killed_writer_are_removed_when_the_run_is_opened(tmp_path):
    run_path = tmp_path / "run"
    RunDir(run_path).open({"model": "default"}, {})
    # A real kill -9 in the middle of atomic_write: the child dies inside its write callback.
    child = (
        "import os, signal, sys\n"
        "from crossknow.store.atomic import atomic_write\n"
        "def die(handle):\n"
        "    handle.write(b'PAR1 half a shard')\n"
        "    handle.flush()\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "atomic_write(sys.argv[1], die, binary=True)\n"
    )
    target = run_path / "stages" / "scores" / "shard-000000.parquet"
    result = subprocess.run([sys.executable, "-c", child, str(target)], capture_output=True, timeout=60)
    assert result.returncode == -9
    leftovers = list(target.parent.glob(".shard-000000.parquet.*.tmp"))
    assert len(leftovers) == 1, "the kill should have left the temporary file behind"
    # Files of the user's that merely look similar stay.
    keep = [run_path / "notes.tmp", run_path / ".notes.tmp", run_path / ".config.yaml.short.tmp"]
    for path in keep:
        path.write_text("mine")

    RunDir(run_path).open({"model": "default"}, {})
    assert list(target.parent.glob("*.tmp")) == [] and not target.exists()
    assert all(path.exists() for path in keep)


def test_remove_stale_temporaries_names_what_it_removed(tmp_path):
    (tmp_path / "a").mkdir()
    old_style = tmp_path / "a" / ".config.yaml.k2_x9q0z.tmp"  # a name tempfile.mkstemp gave
    new_style = tmp_path / ".metrics.json.0f3a9b1c.tmp"
    for path in (old_style, new_style):
        path.write_text("partial")
    assert sorted(remove_stale_temporaries(tmp_path)) == sorted([old_style, new_style])
    assert not old_style.exists() and not new_style.exists()


def test_atomic_write_leaves_no_temporary_on_success(tmp_path):
    atomic_write(tmp_path / "x.bin", lambda handle: handle.write(b"1"), binary=True)
    assert [p.name for p in tmp_path.iterdir()] == ["x.bin"]
