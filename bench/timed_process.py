"""Run a command as a child process and measure its wall-clock time and peak resident memory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

EXIT_POLL = 0.05
"""Seconds between checks for a watched process's exit."""


@dataclass(frozen=True)
class ProcessRun:
    """One finished command."""

    label: str
    """What the run measured."""
    argv: list[str]
    """The command line."""
    seconds: float
    """Wall-clock seconds from start to exit."""
    peak_rss_mb: float
    """Peak resident set size of the process (its waited-for children included), MiB."""
    returncode: int
    """Exit status."""
    log: Path
    """File holding the command's stdout and stderr."""
    killed: bool = False
    """Whether `watch` asked for the process to be killed (SIGKILL) before it finished."""


def run_timed(label: str, argv: list[str], log: Path, env: dict[str, str] | None = None, *,
              watch: Callable[[int, float], bool] | None = None, interval: float = 5.0) -> ProcessRun:
    """Run `argv`, output to `log`; raise SystemExit with the log's tail if it fails.

    With `watch`, call `watch(pid, seconds so far)` every `interval` seconds while the process runs; when it
    returns True the process is killed with SIGKILL, and the run is returned with `killed` set. The exit is
    seen within EXIT_POLL seconds whatever the interval, so the interval does not round the time up."""
    log.parent.mkdir(parents=True, exist_ok=True)
    killed = False
    with open(log, "wb") as output:
        start = time.perf_counter()
        process = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
        next_watch = start + interval
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG if watch else 0)
            if pid:
                break
            time.sleep(EXIT_POLL)
            if not killed and time.perf_counter() >= next_watch:
                next_watch += interval
                if watch(process.pid, time.perf_counter() - start):
                    os.kill(process.pid, signal.SIGKILL)
                    killed = True
        seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    # ru_maxrss is in KiB on Linux, in bytes on macOS.
    peak = usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)
    run = ProcessRun(label, argv, seconds, peak, process.returncode, log, killed)
    if run.returncode != 0 and not killed:
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise SystemExit(f"{label} failed with status {run.returncode}: {' '.join(argv)}\n{tail}")
    return run
