"""Recipe comparisons (full paper section 6.2 and Appendix A.5: Figs. 12, 13, A-3, A-4): one trace per training
recipe, analysed alike and set side by side.

Runs are compared on the items every trace holds (crossknow's choice), with a note of how many each left out; a
shared item that differs between runs (condition, options, answer) makes `compare_recipes` refuse. The best
recipe of a condition has the highest final accuracy (ties all named); `vs_reference` compares with the first run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from crossknow.dynamics.analysis import DynamicsResult, _plain, analyse_dynamics
from crossknow.dynamics.comparison_records import (
    BestRecipe,
    ComparedRunInfo,
    RecipeComparisonSummary,
    RecipeConditionRow,
    RecipeCurveRow,
)
from crossknow.dynamics.condition_summary import condition_summary
from crossknow.dynamics.onset import OnsetParams
from crossknow.dynamics.table import ITEM_KEY, TraceTableError, condition_order, validate_trace
from crossknow.errors import CrossknowError


@dataclass(frozen=True)
class ComparedRun:
    """One trace to compare."""

    label: str
    """How tables and figures name it."""
    trace: pd.DataFrame
    """Its trace table (`crossknow trace`'s trace.parquet)."""
    source: str | None = None
    """Where it came from (a run directory), for error messages and the record."""
    recipe: str | None = None
    """The recipe its training run records (`recipe_name`), when known."""
    sha256: str | None = None
    """SHA-256 of the trace file it was read from, when it was read from one."""


def recipe_name(train_config: Mapping[str, Any]) -> str:
    """The section 6 recipe a `crossknow train` config.yaml records (crossknow's names):

    'instruction' when C_K is the instruction recipe ('instruction+TRANSFER' with a C_T recipe too); else the
    C_T recipe ('documents', 'translation', 'romanisation', 'roman2en'); else 'monolingual' (C_T empty), or
    'multilingual' when C_K holds more than one language (Appendix A.5's mixed-language baseline)."""
    knowledge = train_config.get("recipe", "documents")
    transfer = train_config.get("transfer_recipe") or "none"
    if knowledge == "instruction":
        return "instruction" if transfer == "none" else f"instruction+{transfer}"
    if transfer != "none":
        return str(transfer)
    return "multilingual" if len(train_config.get("langs") or []) > 1 else "monolingual"


def _items(run: ComparedRun) -> pd.DataFrame:
    """One row per item of a run's trace: set, item_id, condition, n_options, answer."""
    where = run.source or run.label
    try:
        validate_trace(run.trace)
    except TraceTableError as error:
        raise TraceTableError(f"{where}: {error}") from None
    options = run.trace[run.trace["step"] == run.trace["step"].min()]
    items = options.groupby(ITEM_KEY, sort=True).agg(condition=("condition", "first"),
                                                     n_options=("option_index", "size"))
    items["answer"] = options[options["is_answer"].astype(bool)].set_index(ITEM_KEY)["option_index"]
    return items


def shared_items(runs: Sequence[ComparedRun]) -> tuple[list[ComparedRun], list[int], list[str]]:
    """The runs with their traces cut to the items every run holds, how many items each left out, and a note
    per run that left some out. Raises CrossknowError when the runs share no item, or when a shared item
    differs between runs (condition, number of options or answer)."""
    items = [_items(run) for run in runs]
    shared = items[0].index
    for table in items[1:]:
        shared = shared.intersection(table.index)
    if not len(shared):
        sets = "; ".join(f"{run.label}: sets {sorted(set(t.index.get_level_values('set')))}"
                         for run, t in zip(runs, items, strict=True))
        raise CrossknowError(f"the runs share no item (an item is a set and an item id), so there is nothing to "
                             f"compare: {sets}")
    for run, table in zip(runs[1:], items[1:], strict=True):
        for column in ("condition", "n_options", "answer"):
            ours, theirs = items[0].loc[shared, column], table.loc[shared, column]
            differ = ours[ours != theirs]
            if len(differ):
                key = differ.index[0]
                raise CrossknowError(
                    f"{len(differ)} shared items differ in {column} between {runs[0].label} and {run.label}, e.g. "
                    f"set {key[0]!r} item {key[1]!r}: {ours[key]} vs {theirs[key]}; the runs were traced on "
                    "different sets" + (" or training languages (--train-lang)" if column == "condition" else ""))
    kept, left_out, notes = [], [], []
    for run, table in zip(runs, items, strict=True):
        dropped = table.index.difference(shared)
        left_out.append(len(dropped))
        if len(dropped):
            example = dropped[0]
            notes.append(f"{run.label}: {len(dropped)} of its {len(table)} items are not in every run and are left "
                         f"out (e.g. set {example[0]!r} item {example[1]!r})")
        keys = pd.MultiIndex.from_frame(run.trace[ITEM_KEY])
        trace = run.trace[keys.isin(shared)].reset_index(drop=True)
        kept.append(ComparedRun(run.label, trace, run.source, run.recipe, run.sha256))
    return kept, left_out, notes


@dataclass
class RecipeComparison:
    """The comparison's tables (pandas); `to_record` gives comparison.json."""

    runs: list[ComparedRun]
    conditions: list[str]
    curves: pd.DataFrame
    """label, condition, step, progress, accuracy, mean_correct_loss, loss_ratio, chance."""
    final: pd.DataFrame
    """One row per condition x run: the fields of RecipeConditionRow."""
    best: pd.DataFrame
    """One row per condition: condition, labels (list), accuracy_last, vs_reference."""
    onsets: pd.DataFrame
    """label, condition, onset_step: the onsets of the correct-loss curves (for the figures)."""
    left_out: list[int]
    onset_params: OnsetParams = field(default_factory=OnsetParams)
    notes: list[str] = field(default_factory=list)

    @property
    def reference(self) -> str:
        """The reference run's label: the first run given."""
        return self.runs[0].label

    def to_record(self) -> RecipeComparisonSummary:
        """The record saved as comparison.json."""
        def rows(frame: pd.DataFrame, model: type) -> list:
            names = list(model.model_fields)
            return [model(**{k: _plain(v) for k, v in row.items()}) for row in frame[names].to_dict("records")]

        windows = self.final.drop_duplicates("label").set_index("label")
        runs = [ComparedRunInfo(label=run.label, source=run.source, trace_sha256=run.sha256, recipe=run.recipe,
                                n_items=int(run.trace[ITEM_KEY].drop_duplicates().shape[0]) + left_out,
                                n_left_out=left_out, first_step=int(windows.loc[run.label, "first_step"]),
                                last_step=int(windows.loc[run.label, "last_step"]))
                for run, left_out in zip(self.runs, self.left_out, strict=True)]
        best = [BestRecipe(condition=row.condition, labels=list(row.labels), accuracy_last=row.accuracy_last,
                           vs_reference=row.vs_reference) for row in self.best.itertuples()]
        return RecipeComparisonSummary(
            reference=self.reference, conditions=self.conditions, runs=runs,
            final=rows(self.final, RecipeConditionRow), best=best, curves=rows(self.curves, RecipeCurveRow),
            onset_params={"tol": self.onset_params.tol, "patience": self.onset_params.patience}, notes=self.notes)


def _curves(label: str, result: DynamicsResult) -> pd.DataFrame:
    keys = ["step", "condition"]
    curves = result.accuracy[[*keys, "accuracy"]].merge(result.correct_loss[[*keys, "mean_correct_loss"]], on=keys)
    curves = curves.merge(result.loss_ratio[[*keys, "loss_ratio", "chance"]], on=keys)
    last = max(result.steps)
    curves["progress"] = curves["step"] / last if last > 0 else 1.0
    curves.insert(0, "label", label)
    return curves[["label", "condition", "step", "progress", "accuracy", "mean_correct_loss", "loss_ratio", "chance"]]


def _best(final: pd.DataFrame, conditions: list[str]) -> pd.DataFrame:
    rows = []
    for condition in conditions:
        group = final[final["condition"] == condition]
        top = group["accuracy_last"].max()
        winners = group[group["accuracy_last"] == top]
        rows.append({"condition": condition, "labels": list(winners["label"]), "accuracy_last": float(top),
                     "vs_reference": float(winners["vs_reference"].iloc[0])})
    return pd.DataFrame(rows, columns=["condition", "labels", "accuracy_last", "vs_reference"])


def compare_recipes(runs: Sequence[ComparedRun], onset_params: OnsetParams = OnsetParams()) -> RecipeComparison:
    """Analyse each run's trace on the items all share (`shared_items`) and set the results side by side.

    Each run is read between its own first and last checkpoint (the runs may have trained for different
    numbers of steps: a recipe with a C_T trains on twice the tokens of the Monolingual baseline in the
    paper). Raises CrossknowError for fewer than two runs or a label given twice.
    """
    if len(runs) < 2:
        raise CrossknowError(f"a comparison needs at least two trace runs; got {len(runs)}")
    labels = [run.label for run in runs]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise CrossknowError(f"two runs share the label(s) {repeated}: give each run its own --label")
    runs, left_out, notes = shared_items(runs)
    curves, finals, onsets = [], [], []
    for run in runs:
        result = analyse_dynamics(run.trace, onset_params=onset_params)
        curves.append(_curves(run.label, result))
        summary = condition_summary(result)
        summary.insert(0, "label", run.label)
        finals.append(summary)
        onsets.append(summary[["label", "condition", "onset_step"]])
    conditions = condition_order(pd.concat(finals)["condition"])
    final = pd.concat(finals, ignore_index=True)
    final["accuracy_change"] = final["accuracy_last"] - final["accuracy_first"]
    reference = final[final["label"] == runs[0].label].set_index("condition")["accuracy_last"]
    final["vs_reference"] = final["accuracy_last"] - final["condition"].map(reference)
    order = {c: i for i, c in enumerate(conditions)}
    final = final.sort_values("condition", key=lambda column: column.map(order), kind="stable").reset_index(drop=True)
    curves = [curve.assign(rank=curve["condition"].map(order)).sort_values(["rank", "step"], kind="stable")
              .drop(columns="rank") for curve in curves]
    return RecipeComparison(runs=runs, conditions=conditions, curves=pd.concat(curves, ignore_index=True),
                            final=final, best=_best(final, conditions), onsets=pd.concat(onsets, ignore_index=True),
                            left_out=left_out, onset_params=onset_params, notes=notes)
