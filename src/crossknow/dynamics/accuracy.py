"""Accuracy per condition per checkpoint, and the chance level it is read against."""

from __future__ import annotations

import pandas as pd

from crossknow.dynamics.table import item_states


def accuracy_from_states(states: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per (step, condition) from `item_states` output.

    accuracy = n_correct / n_items, where an item is correct when its predicted option (lowest loss,
    ties to the lower option_index) is its answer, and n_items counts the condition's items (the same
    at every step: `validate_trace` makes sure). Columns: step, condition, n_items, n_correct, accuracy;
    sorted by step, then condition name.
    """
    grouped = states.groupby(["step", "condition"], sort=True)["correct"]
    table = grouped.agg(n_items="size", n_correct="sum").reset_index()
    table["n_correct"] = table["n_correct"].astype(int)
    table["accuracy"] = table["n_correct"] / table["n_items"]
    return table


def accuracy_by_condition(trace: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per condition per checkpoint of a trace table (columns step, condition, n_items, n_correct,
    accuracy); see `accuracy_from_states` for the definition."""
    return accuracy_from_states(item_states(trace))


def chance_from_states(states: pd.DataFrame) -> dict[str, float]:
    """Chance accuracy per condition: the mean over its items of 1/K (K = the item's number of options).

    This is the expected accuracy of a uniform random guess; 1/K when every item has K options.
    """
    first = states[states["step"] == states["step"].min()]
    chance = (1.0 / first["n_options"]).groupby(first["condition"]).mean()
    return {str(condition): float(value) for condition, value in chance.items()}


def chance_by_condition(trace: pd.DataFrame) -> dict[str, float]:
    """Chance accuracy per condition of a trace table; see `chance_from_states`."""
    return chance_from_states(item_states(trace))
