"""Reports of ECLEKTIC run directories: one run's report.html rebuilt from its files, and the leaderboard of
several runs (`crossknow eclektic report`); `run_and_report` is `crossknow eclektic run`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crossknow.eclektic.metrics import EclekticMetrics, format_estimate
from crossknow.eclektic.run import Progress, RunOutcome, run_eclektic
from crossknow.eclektic.run_config import EclekticConfig
from crossknow.eclektic.run_outputs import JUDGES_FILE, METRICS_FILE, JudgesSummary, unreliable_judges
from crossknow.errors import CrossknowError
from crossknow.report import html
from crossknow.report.eclektic_report import ModelResult, eclektic_report, leaderboard_report
from crossknow.report.run_report import model_spec, run_meta
from crossknow.store.models_file import read_models


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise CrossknowError(f"{path}: not valid JSON ({error})") from error


def read_metrics(run: Path) -> EclekticMetrics:
    """The metrics.json of a scored ECLEKTIC run directory."""
    path = Path(run) / METRICS_FILE
    if not path.is_file():
        raise CrossknowError(f"{run} has no {METRICS_FILE}: is it a scored ECLEKTIC run (`crossknow eclektic run` "
                             "or `score`)?")
    return EclekticMetrics.model_validate(_read_json(path))


def judges_section(summary: JudgesSummary) -> str:
    """Each judge's own scores, and the judges' agreement when there are several."""
    rows = [[judge, format_estimate(m.overall), format_estimate(m.transfer), m.overall.n, m.transfer.n, m.n_invalid]
            for judge, m in summary.by_judge.items()]
    parts = ["<h2>Judges</h2>", html.table(
        "table-judges", "Each judge's verdicts scored alone (the run's scores take the majority)",
        ["judge", "overall success (%)", "transfer score (%)", "n", "|K|", "invalid"], rows)]
    if summary.agreement is not None:
        agreement = summary.agreement
        kappa = "undefined" if agreement.kappa is None else f"{agreement.kappa:.3f}"
        parts.append(html.paragraph(
            f"Agreement ({'Cohen' if agreement.method == 'cohen' else 'Fleiss'}'s kappa) of {agreement.n_judges} "
            f"judges over {agreement.n_items} judged rows: {kappa} ({agreement.n_left_out} rows left out for a "
            "missing verdict)."))
    return "\n".join(parts)


def read_judges(run: Path) -> JudgesSummary | None:
    """The judges.json of a scored ECLEKTIC run directory; None where there is none."""
    path = Path(run) / JUDGES_FILE
    return JudgesSummary.model_validate(_read_json(path)) if path.is_file() else None


def judge_warnings(run: Path) -> list[str]:
    """The judges of a scored run whose verdicts are all or mostly invalid, one sentence each."""
    judges = read_judges(run)
    return unreliable_judges(judges) if judges is not None else []


def rebuild_eclektic_report(run: Path, out: Path | None = None) -> Path:
    """Write report.html (and figures/) of ECLEKTIC run directory `run` from its metrics.json, judges.json,
    config.yaml, inputs.json and models.json, into `out` (default: the run directory); returns its path."""
    run = Path(run)
    metrics = read_metrics(run)
    meta = run_meta(run)
    if models := read_models(run):
        meta["models"] = models
    judges = read_judges(run)
    extra = [judges_section(judges)] if judges is not None and len(judges.judges) > 1 else []
    warnings = unreliable_judges(judges) if judges is not None else []
    label = str(meta.get("model") or run.name)
    return eclektic_report(metrics, out or run, model=label, meta=meta, extra=extra, warnings=warnings)


def run_and_report(config: EclekticConfig, out: Path, on_progress: Progress | None = None) -> tuple[RunOutcome, Path]:
    """`run_eclektic` to the scores, then the report; returns the outcome and the report's path."""
    outcome = run_eclektic(config, out, on_progress=on_progress)
    return outcome, rebuild_eclektic_report(out)


def parse_params(text: str) -> float:
    """A parameter count as written on the command line: '7.6e9', '7.6B', '270M', '1.5b'."""
    cleaned = text.strip().upper()
    scale = {"B": 1e9, "M": 1e6, "K": 1e3}.get(cleaned[-1:], 1.0)
    number = cleaned[:-1] if scale != 1.0 else cleaned
    try:
        value = float(number) * scale
    except ValueError:
        raise CrossknowError(f"--params {text!r}: write a parameter count such as 7.6e9, 7.6B or 270M") from None
    if value <= 0:
        raise CrossknowError(f"--params {text!r}: a parameter count is positive")
    return value


def leaderboard_of_runs(runs: Sequence[Path], out: Path, *, labels: Sequence[str] = (),
                        params: Sequence[str] = ()) -> Path:
    """leaderboard.html of several scored runs into `out`. `labels` and `params` (as `parse_params` reads
    them; '-' for none) go with `runs` in order; unset, a run's label is its model spec and its parameter
    count the one its config records (--params of `crossknow eclektic run`)."""
    for name, values in (("--label", labels), ("--params", params)):
        if values and len(values) != len(runs):
            raise CrossknowError(f"{len(values)} {name} values for {len(runs)} runs: give one per --run, or none")
    results = []
    for k, run in enumerate(runs):
        meta = run_meta(Path(run))
        config = meta.get("config") or {}
        count = params[k] if params else None
        results.append(ModelResult(
            name=labels[k] if labels else str(model_spec(config) or Path(run).name), metrics=read_metrics(run),
            params=parse_params(count) if count not in (None, "-") else config.get("params"), run=str(run)))
    return leaderboard_report(results, out)
