"""`crossknow.pitfalls.evaluate(models, pairs)`: `crossknow pitfalls eval` as one call from Python.

It runs the command's own evaluation (`run_pitfalls_eval`): the same reader checks the pairs, the same simulators
answer them (by loss through the engine, or generatively), the same 2x2 cells are counted. A run directory is
written only where `out` names one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from crossknow.data.records_file import records_file
from crossknow.pitfalls.eval_records import PitfallsEvalConfig
from crossknow.pitfalls.evaluation import run_pitfalls_eval
from crossknow.store.run_dir import kept_or_temporary


def evaluate(
    models: str | Iterable[str],
    pairs: str | Path | Iterable[Mapping[str, Any]] | Any,
    *,
    out: str | Path | None = None,
    **options: Any,
) -> Any:
    """Answer every English/target pair with every model; a pandas DataFrame, one row per pair and model (the
    command's pairs.parquet), with the run's metrics (metrics.json: accuracies, the 2x2 cells, drops) in
    `frame.attrs["metrics"]`.

    `models`: a spec or a list of them. `pairs`: a released `<Language>.json`, a crossknow item file whose English
    and target-language items share a `pair_id`, or such item records as dicts or a DataFrame. `options`: the
    command's (`answering`, `rule`, `limit`, `k`, `device`, `dtype`, `base_url`, ...). `out`: a run directory to
    write (run again on it to resume); unset, nothing is kept."""
    import pandas as pd

    specs = [models] if isinstance(models, str) else list(models)
    with kept_or_temporary(out) as run_dir:
        config = PitfallsEvalConfig(pairs=records_file(pairs, run_dir), models=specs, **options)
        metrics = run_pitfalls_eval(config, run_dir)
        frame = pd.read_parquet(run_dir / "pairs.parquet")
    frame.attrs["metrics"] = metrics.model_dump()
    return frame
