"""The run directory's lock, against a real second process."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from crossknow.errors import CrossknowError
from crossknow.store.run_dir import RunDir
from crossknow.store.run_lock import RunDirInUse

HOLDER = textwrap.dedent(
    """
    import sys
    from crossknow.store.run_dir import RunDir
    run = RunDir(sys.argv[1])
    run.open({"model": "default"}, {})
    print("locked", flush=True)
    sys.stdin.read()  # hold the lock until the test closes our stdin
    run.close()
    print("released", flush=True)
    sys.stdin.read()
    """
)
OPENER = textwrap.dedent(
    """
    import sys
    from crossknow.errors import CrossknowError
    from crossknow.store.run_dir import RunDir
    try:
        RunDir(sys.argv[1]).open({"model": sys.argv[2]}, {}, has_results=sys.argv[3] == "results")
    except CrossknowError as error:
        print(error)
        sys.exit(3)
    print("opened")
    """
)


def _holder(path: Path) -> subprocess.Popen:
    """A process that has opened `path` as a run directory and holds it."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout.readline().strip() == "locked"
    return process


def _open_elsewhere(path: Path, model: str = "default", has_results: bool = False) -> subprocess.CompletedProcess:
    """Open `path` with config {"model": model} in another process: exit 0, or 3 with the error on stdout."""
    argv = [sys.executable, "-c", OPENER, str(path), model, "results" if has_results else "-"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def test_a_second_process_on_the_same_out_fails_at_once_naming_the_holder(tmp_path):
    holder = _holder(tmp_path / "run")
    try:
        with pytest.raises(RunDirInUse, match=rf"is in use by another crossknow process \(pid {holder.pid}\)"):
            RunDir(tmp_path / "run").open({"model": "default"}, {})
        assert issubclass(RunDirInUse, CrossknowError)
        # Through another spelling of the same directory too.
        with pytest.raises(RunDirInUse):
            RunDir(tmp_path / "." / "run").open({"model": "default"}, {})
        # Nothing was written by the refused process.
        assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [".lock", "config.yaml", "environment.json",
                                                                    "inputs.json"]
    finally:
        holder.kill()
        holder.wait()


def test_the_lock_is_free_once_the_holder_closes_or_is_killed(tmp_path):
    holder = _holder(tmp_path / "run")
    holder.stdin.write("\n")
    holder.stdin.close()  # the holder calls run.close() and waits
    holder.stdin = None
    assert holder.stdout.readline().strip() == "released"
    run = RunDir(tmp_path / "run")
    run.open({"model": "default"}, {})
    run.close()
    holder.kill()
    holder.wait()

    killed = _holder(tmp_path / "run")
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    assert killed.returncode == -signal.SIGKILL
    with RunDir(tmp_path / "run") as run:  # a kill -9 leaves no stale lock
        run.open({"model": "default"}, {})


def test_within_one_process_the_lock_is_shared_and_released_with_the_last_hold(tmp_path):
    first, second = RunDir(tmp_path / "run"), RunDir(tmp_path / "run")
    first.open({"model": "default"}, {})
    second.open({"model": "default"}, {})  # the same process resuming: no conflict with itself
    assert _open_elsewhere(tmp_path / "run").returncode == 3
    first.close()
    first.close()  # idempotent
    refused = _open_elsewhere(tmp_path / "run")
    assert refused.returncode == 3 and "in use by another crossknow process" in refused.stdout
    second.close()
    opened = _open_elsewhere(tmp_path / "run")
    assert opened.returncode == 0, opened.stdout + opened.stderr


def test_a_refused_config_releases_the_lock(tmp_path):
    with RunDir(tmp_path / "run") as run:
        run.open({"model": "default"}, {}, has_results=True)
    with pytest.raises(CrossknowError, match="another config"):
        RunDir(tmp_path / "run").open({"model": "other"}, {}, has_results=True)
    assert _open_elsewhere(tmp_path / "run").returncode == 0


def test_a_process_refused_for_its_config_changes_no_file(tmp_path):
    """The lock file names its owner only once the run is opened: a refused command writes nothing."""
    with RunDir(tmp_path / "run") as run:
        run.open({"model": "default"}, {}, has_results=True)
    before = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()}
    refused = _open_elsewhere(tmp_path / "run", model="other", has_results=True)
    assert refused.returncode == 3 and "another config" in refused.stdout
    assert {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()} == before
