"""Run a command as a child process and measure its wall-clock time and peak resident memory."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


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


def run_timed(label: str, argv: list[str], log: Path, env: dict[str, str] | None = None) -> ProcessRun:
    """Run `argv`, output to `log`; raise SystemExit with the log's tail if it fails."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as output:
        start = time.perf_counter()
        process = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    # ru_maxrss is in KiB on Linux, in bytes on macOS.
    peak = usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)
    run = ProcessRun(label, argv, seconds, peak, process.returncode, log)
    if run.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise SystemExit(f"{label} failed with status {run.returncode}: {' '.join(argv)}\n{tail}")
    return run
