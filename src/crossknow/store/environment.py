"""environment.json: what each invocation of a run directory ran on, beside the config and the inputs' hashes.

One entry per distinct environment, appended when a run is opened (a run resumed on another machine, or after an
upgrade, says so): crossknow's version and, for a source checkout, its git commit; Python; the versions of the
packages that compute the numbers (torch's local tag names its build: `+cu121`, `+cpu`); the GPUs and their driver
where `nvidia-smi` answers; the CPU model and the cores this process may use. Read without importing torch, so that
a command that loads no model pays nothing for it.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
from datetime import UTC, datetime
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from crossknow.errors import CrossknowError
from crossknow.store.atomic import atomic_write_json

ENVIRONMENT_FILE = "environment.json"

PACKAGES = ("crossknow", "torch", "transformers", "tokenizers", "accelerate", "peft", "bitsandbytes",
            "llama_cpp_python", "numpy", "pyarrow")
"""Distributions whose versions are recorded (None when not installed)."""

_SOURCE = Path(__file__).resolve().parents[1]
"""crossknow's package directory (src/crossknow in a checkout)."""


@cache
def current_environment() -> dict[str, Any]:
    """This process's environment, as environment.json records it (without the time it was first seen); read once
    per process, which may open many run directories."""
    return {
        "packages": {name: _version(name) for name in PACKAGES},
        "git_commit": _git_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpu_threads": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "gpus": _gpus(),
    }


def record_environment(run_dir: Path) -> None:
    """Append this process's environment to `run_dir`'s environment.json unless an entry already holds it."""
    path = Path(run_dir) / ENVIRONMENT_FILE
    entries = read_environments(run_dir)
    current = current_environment()
    if not any({k: v for k, v in entry.items() if k != "first_seen"} == current for entry in entries):
        atomic_write_json(path, [*entries, {"first_seen": datetime.now(UTC).isoformat(timespec="seconds"), **current}])


def read_environments(run_dir: Path) -> list[dict[str, Any]]:
    """The entries of `run_dir`'s environment.json, oldest first ([] before the first)."""
    path = Path(run_dir) / ENVIRONMENT_FILE
    if not path.is_file():
        return []
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise CrossknowError(f"{path}: not a readable environment file ({error})") from error
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise CrossknowError(f"{path}: expected a list of environment entries")
    return entries


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    """HEAD of the checkout crossknow runs from (with '+dirty' when tracked files changed); None for an installed
    package, whose version says what it is."""
    root = _SOURCE.parents[1]
    if _SOURCE != root / "src" / "crossknow" or not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        changed = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                 capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if changed else "")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _gpus() -> list[dict[str, str]]:
    """Name and driver of each NVIDIA GPU `nvidia-smi` lists ([] without one)."""
    try:
        listed = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    rows = [line.rsplit(",", 1) for line in listed.splitlines() if "," in line]
    return [{"name": name.strip(), "driver": driver.strip()} for name, driver in rows]
