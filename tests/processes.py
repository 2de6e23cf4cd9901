"""Start a crossknow command in a subprocess and kill -9 it at a chosen moment, for resume tests."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path


def run_until_then_kill(
    command: Sequence[str], cwd: Path, log: Path, ready: Callable[[], bool], timeout_s: float, what: str,
    env: Mapping[str, str] | None = None,
) -> None:
    """Run `command` (in environment `env`, else this process's), poll `ready()` every 10 ms, and SIGKILL the
    process as soon as it is true.

    Fails the test when the process ends first or `ready()` stays false for `timeout_s` (`what` names
    the awaited event in the message). Output goes to the file `log`: a full pipe would stall the process.
    """
    with open(log, "wb") as sink:
        process = subprocess.Popen(list(command), cwd=cwd, stdout=sink, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + timeout_s
        while not ready():
            assert process.poll() is None, f"the run ended before {what}: {log.read_text()}"
            assert time.monotonic() < deadline, f"{what} did not happen within {timeout_s} s"
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == -signal.SIGKILL
