"""An unexpected internal error at the command line: one line on the terminal, the traceback in a file.

`crossknow --debug ...` (or `CROSSKNOW_DEBUG=1`) shows the traceback in the terminal instead.
"""

from __future__ import annotations

import os
import time
import traceback
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

DEBUG_VARIABLE = "CROSSKNOW_DEBUG"
"""Environment variable that, set to a non-empty value other than 0, shows tracebacks in the terminal."""


def debug_requested() -> bool:
    """Whether the user asked for tracebacks in the terminal (`--debug` sets the variable too)."""
    return os.environ.get(DEBUG_VARIABLE, "") not in ("", "0")


def package_versions() -> str:
    """'crossknow X, torch Y, transformers Z' as installed (read from metadata: nothing is imported)."""
    found = []
    for name in ("crossknow", "torch", "transformers"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} not installed")
    return ", ".join(found)


def crash_dir() -> Path:
    """Where crash reports go: `crashes/` under crossknow's cache directory."""
    from crossknow.store.cache_dir import cache_dir

    return cache_dir() / "crashes"


def write_crash_report(error: BaseException, argv: list[str]) -> Path:
    """Write the command line, the versions and `error`'s full traceback to a new file; return its path."""
    directory = crash_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"crash-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.txt"
    text = "".join(traceback.format_exception(error))
    path.write_text(f"command: {' '.join(argv)}\nversions: {package_versions()}\n\n{text}", encoding="utf-8")
    return path


def crash_message(error: BaseException, report: Path | None) -> str:
    """The one line printed for an unexpected error."""
    what = f"{type(error).__name__}: {error}".splitlines()[0][:300]
    where = f"full traceback in {report}" if report else "the traceback could not be written to a file"
    return (f"internal error (a bug in crossknow or an unsupported environment; {package_versions()}): "
            f"{what}; {where}; run with --debug to see it here")
