"""`crossknow.trace(checkpoints, items)`: the `trace` command's scores as one call from Python.

It runs the command's own sweep (`run_trace`): one loaded model for a training run's checkpoints, the blocks no
checkpoint changed run once. A run directory is written only where `out` names one; otherwise the run lives in a
temporary directory that is removed. The report is the command's (`crossknow trace`, `crossknow report`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from crossknow.data.records_file import records_file
from crossknow.dynamics.trace import run_trace
from crossknow.dynamics.trace_config import TraceConfig
from crossknow.store.run_dir import kept_or_temporary


def trace(
    checkpoints: str | Path | Iterable[str | Path],
    items: str | Path | Iterable[Mapping[str, Any]] | Any,
    *,
    out: str | Path | None = None,
    **options: Any,
) -> Any:
    """Score every option of every item at every checkpoint; a pandas DataFrame, one row per checkpoint, item and
    option (the columns of the command's trace.parquet: step, checkpoint, condition, loss, ...).

    `checkpoints`: a `crossknow train` run directory, a directory of checkpoint-STEP directories, a model
    directory, `default` or `hf:ID@REVISION`, or a list of them. `items`: an item file, crossknow's item records as
    dicts, or a DataFrame of them (one set). `out`: a run directory to write (run again on it to resume); unset,
    nothing is kept. `options`: the command's options by their config names (`train_lang`, `rule`, `batch_size`,
    `device`, `dtype`, ...)."""
    sources = [str(checkpoints)] if isinstance(checkpoints, str | Path) else [str(c) for c in checkpoints]
    with kept_or_temporary(out) as run_dir:
        config = TraceConfig(checkpoints=sources, data=[records_file(items, run_dir)], **options)
        return run_trace(config, run_dir).to_pandas()
