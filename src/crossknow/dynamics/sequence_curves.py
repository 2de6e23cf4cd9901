"""Loss curves of original and perturbed sequences over checkpoints (full paper, section 5.1, Figs. 5-9).

A curve is one perturbation setting (`curve_label`: mask-8, reorder-4@2, partial-3, syntax-40, original): its mean
sequence loss per step, with the onset of `crossknow.dynamics.onset`. The gap to the original is paired
(crossknow's choice): the mean over a setting's variants of the variant's loss minus its own original's.
"""

from __future__ import annotations

import math

import pandas as pd

from crossknow.data.sequence_variants import METHOD_ORDER, variant_label
from crossknow.dynamics.analysis import curve_onset
from crossknow.dynamics.onset import OnsetParams

SETTING = ["method", "x", "y", "a"]
"""The columns that make one curve."""
GAP_DEFINITION = (
    "Gap to the original: at one step, the mean over a setting's sequences of (the sequence's loss - the loss of "
    "the original sequence it was made from), in nats per token; positive means the perturbation costs loss. "
    "Paired (crossknow's choice), so a setting is compared on the sources it has."
)


def _number(value: object) -> int | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA else int(value)


def curve_label(method: str, x: object = None, y: object = None, a: object = None) -> str:
    """`variant_label` of a table's setting, its missing values (None, NaN, <NA>) read as absent: original,
    mask-8, reorder-4@2, partial-3, syntax-40."""
    return variant_label(method, _number(x), _number(y), _number(a))


def _setting_order(frame: pd.DataFrame) -> pd.DataFrame:
    """Settings sorted by METHOD_ORDER (a method not listed after them, by name), then x, y and a."""
    rank = {method: i for i, method in enumerate(METHOD_ORDER)}
    keyed = frame.assign(_rank=frame["method"].map(lambda m: rank.get(m, len(rank))))
    keyed = keyed.sort_values(["_rank", "method", "x", "y", "a"], na_position="first", kind="stable")
    return keyed.drop(columns="_rank").reset_index(drop=True)


def sequence_curves(table: pd.DataFrame) -> pd.DataFrame:
    """Mean loss per setting and step of a sequence_loss table: label, method, x, y, a, step, mean_loss and
    n_sequences, settings in METHOD_ORDER and steps ascending."""
    grouped = table.groupby([*SETTING, "step"], dropna=False, sort=False)["loss"].agg(["mean", "size"])
    curves = grouped.reset_index().rename(columns={"mean": "mean_loss", "size": "n_sequences"})
    curves["label"] = [curve_label(*row) for row in curves[SETTING].itertuples(index=False)]
    curves = _setting_order(curves.sort_values("step", kind="stable"))
    return curves[["label", *SETTING, "step", "mean_loss", "n_sequences"]]


def paired_gaps(table: pd.DataFrame) -> pd.DataFrame:
    """GAP_DEFINITION per setting and step: label, step, gap, n_pairs (variants whose original was scored)."""
    originals = table[table["method"] == "original"][["step", "source_id", "loss"]]
    originals = originals.drop_duplicates(["step", "source_id"]).rename(columns={"loss": "original_loss"})
    variants = table[table["method"] != "original"].merge(originals, on=["step", "source_id"], how="inner")
    variants = variants.assign(gap=variants["loss"] - variants["original_loss"])
    grouped = variants.groupby([*SETTING, "step"], dropna=False)["gap"].agg(["mean", "size"]).reset_index()
    grouped["label"] = [curve_label(*row) for row in grouped[SETTING].itertuples(index=False)]
    return grouped.rename(columns={"mean": "gap", "size": "n_pairs"})[["label", "step", "gap", "n_pairs"]]


def curve_summary(table: pd.DataFrame, onset_params: OnsetParams = OnsetParams()) -> pd.DataFrame:
    """One row per setting: label, method, x, y, a, n_sequences, first_step, first_loss, last_step, last_loss,
    min_loss, min_step, onset_step (<NA> without a sustained rise), gap_first, gap_last (GAP_DEFINITION; NaN
    for the originals and settings without a scored original)."""
    curves, gaps = sequence_curves(table), paired_gaps(table).set_index(["label", "step"])["gap"]
    rows = []
    for label, curve in curves.groupby("label", sort=False):
        first, last = curve.iloc[0], curve.iloc[-1]
        onset = curve_onset(str(label), None, curve["step"], curve["mean_loss"], onset_params)
        rows.append({
            "label": label, **{column: first[column] for column in SETTING}, "n_sequences": int(first["n_sequences"]),
            "first_step": int(first["step"]), "first_loss": float(first["mean_loss"]), "last_step": int(last["step"]),
            "last_loss": float(last["mean_loss"]), "min_loss": onset["min_value"], "min_step": onset["min_step"],
            "onset_step": onset["onset_step"], "gap_first": _gap(gaps, label, first["step"]),
            "gap_last": _gap(gaps, label, last["step"]),
        })
    columns = ["label", *SETTING, "n_sequences", "first_step", "first_loss", "last_step", "last_loss", "min_loss",
               "min_step", "onset_step", "gap_first", "gap_last"]
    return pd.DataFrame(rows, columns=columns).astype({"onset_step": "Int64", "gap_first": float, "gap_last": float})


def _gap(gaps: pd.Series, label: str, step: int) -> float | None:
    key = (label, step)
    return float(gaps[key]) if key in gaps.index else None
