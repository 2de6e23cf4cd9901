"""`crossknow report --run DIR`: rebuild the dynamics report of a trace run directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from crossknow.cli.app import app, console
from crossknow.errors import CrossknowError

TRACE_FILE = "trace.parquet"
TRAIN_LOG_FILE = "train_log.parquet"
CONFIG_FILE = "config.yaml"
INPUTS_FILE = "inputs.json"
TRAIN_CONFIG_FILE = "train_config.yaml"


def run_meta(run: Path) -> dict[str, Any]:
    """The report header of a run directory: its path, the model (when the config names one), the resolved
    config (config.yaml), the training run's config (train_config.yaml) and the inputs' hashes (inputs.json),
    each where present."""
    import yaml

    meta: dict[str, Any] = {"run directory": str(run)}
    config_path, inputs_path = run / CONFIG_FILE, run / INPUTS_FILE
    if config_path.exists():
        try:
            config = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as error:
            raise CrossknowError(f"{config_path}: not valid YAML ({error})") from error
        if isinstance(config, dict) and "model" in config:
            meta["model"] = config["model"]
        meta["config"] = config
    train_config_path = run / TRAIN_CONFIG_FILE
    if train_config_path.exists():
        meta["training config"] = yaml.safe_load(train_config_path.read_text(encoding="utf-8"))
    if inputs_path.exists():
        try:
            meta["inputs"] = json.loads(inputs_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise CrossknowError(f"{inputs_path}: not valid JSON ({error})") from error
    return meta


def _read_parquet(path: Path):
    import pandas as pd

    try:
        return pd.read_parquet(path)
    except Exception as error:  # pyarrow raises several types for a damaged file
        raise CrossknowError(f"{path}: cannot be read as Parquet ({error})") from error


def rebuild_report(run: Path, first_step: int | None = None, last_step: int | None = None,
                   out: Path | None = None) -> Path:
    """Rebuild report.html, dynamics.json and figures/ of trace run directory `run` (into `out`, default
    `run`) from run/trace.parquet and, when present, run/train_log.parquet; returns the report's path."""
    from crossknow.report import build_report

    run = Path(run)
    trace_path = run / TRACE_FILE
    if not trace_path.is_file():
        raise CrossknowError(f"{run} has no {TRACE_FILE}: is it the run directory of `crossknow trace`?")
    trace = _read_parquet(trace_path)
    log_path = run / TRAIN_LOG_FILE
    train_log = _read_parquet(log_path) if log_path.is_file() else None
    return build_report(trace, out or run, train_log=train_log, meta=run_meta(run), first_step=first_step,
                        last_step=last_step)


@app.command()
def report(
    run: Path = typer.Option(..., help="Run directory of `crossknow trace` (holds trace.parquet)."),
    first_step: int | None = typer.Option(None, help="First checkpoint step compared by transitions and shapes."),
    last_step: int | None = typer.Option(None, help="Last checkpoint step compared by transitions and shapes."),
    out: Path | None = typer.Option(None, help="Write the report here instead of into the run directory."),
) -> None:
    """Rebuild the dynamics report (report.html, dynamics.json, figures/) of a trace run directory."""
    path = rebuild_report(run, first_step=first_step, last_step=last_step, out=out)
    console.print(str(path), highlight=False, soft_wrap=True)
