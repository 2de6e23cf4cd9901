"""`crossknow compare`: several trace runs, one per training recipe, side by side (full paper section 6.2 and
Appendix A.5: Figs. 12, 13, A-3, A-4).

The report leads with the best recipe per condition, then every run's final numbers and the figures; the curves'
numbers, configs and definitions come last, collapsed. comparison.json holds every number. How items and the best
recipe are decided: `crossknow.dynamics.recipe_comparison`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from crossknow.dynamics.onset import ONSET_DEFINITION, OnsetParams
from crossknow.dynamics.recipe_comparison import ComparedRun, RecipeComparison, compare_recipes, recipe_name
from crossknow.dynamics.trace_config import TraceConfig
from crossknow.errors import CrossknowError
from crossknow.report import html
from crossknow.report.comparison_figures import CURVES, XAxis, final_accuracy_figure, recipe_curves_figure
from crossknow.report.condition_table import arrow, integer_or_none
from crossknow.report.figures import save_figure
from crossknow.report.run_report import TRACE_FILE, TRAIN_CONFIG_FILE, read_trace, run_meta
from crossknow.store.atomic import atomic_write_json, atomic_write_text
from crossknow.store.hashing import file_sha256
from crossknow.store.run_dir import CONFIG_FILE

REPORT_FILE = "report.html"
COMPARISON_FILE = "comparison.json"
FIGURES = ["final-accuracy", *CURVES]
"""Figure ids: <figure id="fig-NAME"> in the HTML, figures/NAME.png on disk."""
FINAL_HEADERS = ["condition", "recipe", "items", "steps", "accuracy", "final accuracy", "vs reference",
                 "final loss ratio", "acquired", "forgotten", "overfitting onset"]
"""Headers of table-final (the 'vs reference' header names the reference run in the page)."""
DEFINITIONS = (
    "Runs are compared on the items every run's trace holds (an item: a set and an item id); items only some "
    "runs hold are left out, and a note says how many. A shared item must have the same condition, options and "
    "answer in every run, or the comparison is refused.",
    "Each run is read from its own first to its own last checkpoint: 'final' numbers are at its last step. The best "
    "recipe of a condition has the highest final accuracy; exact ties are all named. 'vs reference' is a run's "
    "final accuracy minus the reference run's (the first run given).",
    "Training progress (with --x progress) is a run's step divided by its last step compared, so that runs of "
    "different lengths (a C_T doubles the tokens in the paper's section 6) end at 1 together (crossknow's choice).",
    "Loss ratio of a condition: the sum over its items of the correct option's loss divided by the sum of all their "
    "options' losses (a ratio of sums, crossknow's choice; the paper does not say how items are aggregated); "
    "lower is better, and chance is 1/K with K options. The loss of an option is its mean token cross-entropy.",
)


def _yaml(path: Path) -> dict[str, Any] | None:
    try:
        value = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise CrossknowError(f"{path}: not valid YAML ({error})") from error
    return value if isinstance(value, dict) else None


def training_config(run: Path) -> dict[str, Any] | None:
    """The config of the `crossknow train` run a trace run scored: its train_config.yaml (copied there by `crossknow
    trace`), else the config.yaml of the one training run directory among the trace's checkpoint sources (a
    directory with config.yaml and checkpoints/); None when neither is reachable."""
    copied = Path(run) / TRAIN_CONFIG_FILE
    if copied.is_file():
        return _yaml(copied)
    trace_config = Path(run) / CONFIG_FILE
    recorded = TraceConfig.upgrade(_yaml(trace_config) or {}) if trace_config.is_file() else {}
    sources = (recorded.get("checkpoints") or {}).get("specs") or []
    found = []
    for source in sources:
        step, sep, rest = str(source).partition("=")
        path = Path((rest if sep and step.isdigit() else str(source)).removeprefix("hf:"))
        if (path / CONFIG_FILE).is_file() and (path / "checkpoints").is_dir():
            found.append(path)
    return _yaml(found[0] / CONFIG_FILE) if len(set(found)) == 1 else None


def read_runs(runs: Sequence[Path], labels: Sequence[str] = ()) -> list[ComparedRun]:
    """The trace runs to compare, labelled by `labels` (one per run) or, unset, by the recipe their training
    config records (`recipe_name`), else by their directory's name; a default label two runs share gets the
    directory's name added. Refuses a run given twice, a label count that does not match, and runs scored
    under different scoring rules or boundaries (their losses are not comparable)."""
    if labels and len(labels) != len(runs):
        raise CrossknowError(f"{len(labels)} --label values for {len(runs)} runs: give one per run, in order, or none")
    resolved = [Path(run).resolve() for run in runs]
    twice = [str(run) for run, n in Counter(resolved).items() if n > 1]
    if twice:
        raise CrossknowError(f"run directory given more than once: {', '.join(twice)}")
    read = []
    for run in runs:
        trace = read_trace(Path(run))
        train = training_config(Path(run))
        read.append((Path(run), trace, recipe_name(train) if train else None))
    _check_scoring([run for run, _, _ in read])
    names = list(labels) or [recipe or run.name for run, _, recipe in read]
    if not labels:
        counts = Counter(names)
        names = [f"{name} ({run.name})" if counts[name] > 1 else name for name, (run, _, _) in zip(names, read,
                                                                                                   strict=True)]
    return [ComparedRun(name, trace, str(run), recipe, file_sha256(run / TRACE_FILE))
            for name, (run, trace, recipe) in zip(names, read, strict=True)]


def _check_scoring(runs: list[Path]) -> None:
    for key in ("rule", "boundary"):
        values = {str(run): (run_meta(run).get("config") or {}).get(key) for run in runs}
        if len({value for value in values.values() if value is not None}) > 1:
            shown = "; ".join(f"{run}: {value}" for run, value in values.items())
            raise CrossknowError(f"the runs were scored with different {key!r} settings, so their losses are not "
                                 f"comparable: {shown}")


def _lead(comparison: RecipeComparison) -> str:
    """The finding in a sentence: the best recipe per condition against the reference."""
    parts = []
    for row in comparison.best.itertuples():
        names = " = ".join(row.labels)
        versus = ("the reference" if comparison.reference in row.labels
                  else f"{row.vs_reference:+.3f} vs {comparison.reference}")
        parts.append(f"{row.condition}: {names} {row.accuracy_last:.3f} ({versus})")
    n_items = comparison.final.groupby("label")["n_items"].sum().iloc[0]
    return (f"Best final accuracy per condition, {len(comparison.runs)} runs on {n_items} shared items: "
            + "; ".join(parts) + ".")


def _final_rows(comparison: RecipeComparison) -> list[list[object]]:
    return [[row.condition, row.label, row.n_items, f"{row.first_step} → {row.last_step}",
             arrow(row.accuracy_first, row.accuracy_last), row.accuracy_last, row.vs_reference,
             row.loss_ratio_last, *map(integer_or_none, (row.acquired, row.forgotten, row.onset_step))]
            for row in comparison.final.itertuples()]


def comparison_report(comparison: RecipeComparison, out: Path, x: XAxis = "step") -> Path:
    """Write comparison.json, figures/ and report.html of `comparison` into `out`; returns the report's path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    reference = comparison.reference
    best = html.table("table-best", "Best recipe per condition: the highest final accuracy",
                      ["condition", "best recipe", "final accuracy", f"vs {reference}"],
                      [[row.condition, " = ".join(row.labels), row.accuracy_last, row.vs_reference]
                       for row in comparison.best.itertuples()], text_columns=2)
    final = html.table("table-final", f"Final numbers per condition and recipe (reference: {reference}; loss ratio: "
                       "correct / all options, lower is better)",
                       [*FINAL_HEADERS[:6], f"vs {reference}", *FINAL_HEADERS[7:]], _final_rows(comparison),
                       text_columns=2)
    figures = [save_figure(out, "final-accuracy", final_accuracy_figure(comparison),
                           "Final accuracy of each recipe per condition (hatched: the reference)")]
    for name in CURVES:
        figures.append(save_figure(out, name, recipe_curves_figure(comparison, name, x),
                                   f"{CURVES[name][2]}; the reference dashed black"))
    findings = [best, *(html.paragraph(note, "note") for note in comparison.notes), final,
                "<h2>Figures</h2>", *figures]
    curves = comparison.curves
    numbers = html.table("table-curves", "Every run's curves", ["recipe", "condition", "step", "progress", "accuracy",
                                                                "correct-option loss", "loss ratio"],
                         curves[["label", "condition", "step", "progress", "accuracy", "mean_correct_loss",
                                 "loss_ratio"]].itertuples(index=False), text_columns=2)
    runs = html.table("table-runs", "Runs", ["recipe", "training recipe", "run directory", "trace SHA-256"],
                      [[run.label, run.recipe, run.source, run.sha256] for run in comparison.runs], text_columns=4)
    metas = [html.meta_table(run_meta(Path(run.source)), f"table-meta-{i}", run.label)
             for i, run in enumerate(comparison.runs) if run.source]
    collapsed = [("Numbers behind the figures", [numbers]), ("Runs: configs and inputs", [runs, *metas]),
                 ("Definitions", [*(html.paragraph(text) for text in DEFINITIONS),
                                  html.preformatted(ONSET_DEFINITION)])]
    atomic_write_json(out / COMPARISON_FILE, comparison.to_record().model_dump(mode="json"))
    page = html.report_page("crossknow: recipe comparison", _lead(comparison), findings, collapsed)
    return atomic_write_text(out / REPORT_FILE, page)


def compare_runs(runs: Sequence[Path], out: Path, *, labels: Sequence[str] = (), x: XAxis = "step",
                 onset_params: OnsetParams = OnsetParams()) -> tuple[Path, RecipeComparison]:
    """`crossknow compare`: read the trace runs (`read_runs`), compare them (`compare_recipes`) and write the
    report into `out`; returns the report's path and the comparison."""
    comparison = compare_recipes(read_runs(runs, labels), onset_params)
    return comparison_report(comparison, out, x), comparison
