"""crossknow's cache directory: converted checkpoints, request caches, fetched releases, Hub data in JSON lines."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """$CROSSKNOW_CACHE, else $XDG_CACHE_HOME/crossknow, else ~/.cache/crossknow."""
    if os.environ.get("CROSSKNOW_CACHE"):
        return Path(os.environ["CROSSKNOW_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "crossknow"
