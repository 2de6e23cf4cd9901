"""The report of a trace run directory: its header (`run_meta`), rebuilding it from the files the run wrote
(`rebuild_report`), and the accuracy lines a command prints (`accuracy_lines`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crossknow.errors import CrossknowError
from crossknow.report.build import DYNAMICS_FILE, build_report
from crossknow.store.run_dir import CONFIG_FILE, INPUTS_FILE

if TYPE_CHECKING:
    import pandas as pd

TRACE_FILE = "trace.parquet"
"""The scores table `crossknow trace` writes into its run directory."""
ACCURACY_FILE = "accuracy.json"
"""Accuracy under every normalisation per step and condition, written by `crossknow trace`."""
TRAIN_LOG_FILE = "train_log.parquet"
"""The training loss log, copied from the training run when a checkpoint source is one."""
TRAIN_CONFIG_FILE = "train_config.yaml"
"""The training run's config.yaml, copied beside the trace's own config."""


def model_spec(config: dict[str, Any]) -> str | None:
    """The spec of the model a run's config.yaml names: its `model` role's spec (or, in runs written before roles,
    the `model` string); None when it names none."""
    model = config.get("model")
    return model.get("spec") if isinstance(model, dict) else model


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
        if isinstance(config, dict) and model_spec(config) is not None:
            meta["model"] = model_spec(config)
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


def read_trace(run: Path) -> pd.DataFrame:
    """The trace table (trace.parquet) of trace run directory `run`, as a pandas DataFrame; a clear error when
    `run` is not a directory or holds no trace."""
    run = Path(run)
    if not run.is_dir():
        raise CrossknowError(f"{run}: no such directory (expected the run directory of `crossknow trace`)")
    trace_path = run / TRACE_FILE
    if not trace_path.is_file():
        raise CrossknowError(f"{run} has no {TRACE_FILE}: is it the run directory of `crossknow trace`?")
    return _read_parquet(trace_path)


def rebuild_report(run: Path, first_step: int | None = None, last_step: int | None = None,
                   out: Path | None = None) -> Path:
    """Rebuild report.html, dynamics.json and figures/ of trace run directory `run` (into `out`, default
    `run`) from run/trace.parquet and, when present, run/train_log.parquet; returns the report's path."""
    run = Path(run)
    trace = read_trace(run)
    log_path = run / TRAIN_LOG_FILE
    train_log = _read_parquet(log_path) if log_path.is_file() else None
    return build_report(trace, out or run, train_log=train_log, meta=run_meta(run), first_step=first_step,
                        last_step=last_step)


def accuracy_lines(report_dir: Path) -> list[str]:
    """'condition: first -> last' accuracy lines, from the dynamics.json the report wrote in `report_dir`
    (accuracy by the rule's own loss); for a trace under the lm-eval rule, lm-eval's acc_norm follows,
    from the accuracy.json the trace wrote (every normalisation per step and condition)."""
    report_dir = Path(report_dir)
    dynamics = json.loads((report_dir / DYNAMICS_FILE).read_text(encoding="utf-8"))
    steps = [entry["step"] for entry in dynamics["steps"]]
    first, last = min(steps), max(steps)
    by_key = {(row["step"], row["condition"]): row for row in dynamics["accuracy"]}
    lm_eval = _rule(report_dir) == "lm-eval"
    lines = []
    for condition in dynamics["conditions"]:
        start, end = by_key[(first, condition)], by_key[(last, condition)]
        name = f"{condition} acc" if lm_eval else condition
        lines.append(f"{name:<20} step {first}: {start['accuracy']:.3f}  ->  step {last}: "
                     f"{end['accuracy']:.3f}  ({end['n_items']} items)")
    accuracy_path = report_dir / ACCURACY_FILE
    if lm_eval and accuracy_path.is_file():
        by_step = json.loads(accuracy_path.read_text(encoding="utf-8"))
        for condition in dynamics["conditions"]:
            group = f"condition={condition}"
            start, end = (by_step[str(step)]["accuracy"]["per_char"][group] for step in (first, last))
            lines.append(f"{condition + ' acc_norm':<20} step {first}: {start:.3f}  ->  step {last}: {end:.3f}")
    return lines


def _rule(run: Path) -> str | None:
    """The scoring rule in a run directory's config.yaml, if it names one."""
    import yaml

    config_path = run / CONFIG_FILE
    if not config_path.is_file():
        return None
    config = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
    return config.get("rule") if isinstance(config, dict) else None
