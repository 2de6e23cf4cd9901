"""`crossknow.eclektic.score(judgements)`: ECLEKTIC's metrics of judgements made elsewhere, as one call from Python.

It runs `crossknow eclektic score --judgements`'s own path (`score_judgement_file`): the same reader checks the
records, the same reading of the source rows and the same intervals score them. A run directory is written only
where `out` names one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from crossknow.data.records_file import records_file
from crossknow.eclektic.metrics import EclekticMetrics
from crossknow.eclektic.run import score_judgement_file
from crossknow.eclektic.run_config import ScoreConfig
from crossknow.store.run_dir import kept_or_temporary

JUDGEMENTS_FILE = "judgements.jsonl"
"""Where judgements from memory are written for the reader, in the run directory."""


def score(
    judgements: str | Path | Iterable[Mapping[str, Any]] | Any, *, out: str | Path | None = None, **options: Any,
) -> EclekticMetrics:
    """Overall success and transfer score (section 3.2), with intervals and source x target matrices, of
    `judgements`: a JSONL file, or records as dicts or a DataFrame, each with `q_id`, `source_lang`,
    `target_lang`, `correct` (true, false, or null for an invalid judgement) and optionally `sample`.
    `options`: the command's (`source_rows`, `ci`, `confidence`, `n_boot`, `boot_seed`). `out`: a run directory to
    write (metrics.json, examples.parquet); unset, nothing is kept."""
    config = ScoreConfig(**options)
    with kept_or_temporary(out) as run_dir:
        return score_judgement_file(Path(records_file(judgements, run_dir, JUDGEMENTS_FILE)), run_dir, config)
