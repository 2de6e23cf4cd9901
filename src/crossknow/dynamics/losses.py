"""Loss of the correct option, and the loss ratio (full paper Figs. 3 and 4; short paper Fig. 3).

`loss` is the paper's per-option loss: the mean token cross-entropy of the option's scored sequence.
LOSS_RATIO_DEFINITION states how a condition's loss ratio aggregates its items.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from crossknow.dynamics.table import ITEM_KEY, item_states

LOSS_RATIO_DEFINITION = """\
Loss ratio of a condition at a step. The papers measure "the ratio of the sequence loss for correct answers to
the total loss across the four candidate options" (full paper Sec. 4.3) and do not say how items are aggregated.
crossknow reports both aggregations from the same losses; with l_i the correct option's loss of item i and T_i
the sum of all its options' losses:
- loss_ratio (the figure and the first table) = (sum_i l_i) / (sum_i T_i), a ratio of sums, crossknow's choice
  for the headline number: it is the ratio of the condition's summed correct loss to its summed total loss, so
  an item with larger losses weighs more;
- mean_item_ratio (the second table) = (1/n) sum_i l_i / T_i, the mean of the per-item ratios: every item
  weighs the same.
The two agree when every item has the same total loss; chance = n / sum_i K_i (1/K with K options each)."""
"""How the loss ratio aggregates items, quoted by the report and the README."""


def correct_loss_from_states(states: pd.DataFrame) -> pd.DataFrame:
    """Mean loss of the correct option per (step, condition), from `item_states` output.

    mean_correct_loss = (1/n) * sum over the condition's n items of the correct option's loss.
    Columns: step, condition, n_items, mean_correct_loss; sorted by step, then condition.
    """
    grouped = states.groupby(["step", "condition"], sort=True)["correct_loss"]
    return grouped.agg(n_items="size", mean_correct_loss="mean").reset_index()


def correct_loss_by_condition(trace: pd.DataFrame) -> pd.DataFrame:
    """Mean loss of the correct option per condition per checkpoint of a trace table; see
    `correct_loss_from_states`."""
    return correct_loss_from_states(item_states(trace))


def item_ratios_from_states(states: pd.DataFrame) -> pd.DataFrame:
    """Per checkpoint x item: ratio = correct option's loss / sum of all K options' losses.

    Chance (all options equally likely, equal losses) is 1/K; below 1/K the correct option is
    favoured. Columns: step, set, item_id, condition, n_options, ratio.
    """
    table = states[["step", *ITEM_KEY, "condition", "n_options"]].copy()
    table["ratio"] = states["correct_loss"] / states["total_loss"]
    return table


def item_loss_ratios(trace: pd.DataFrame) -> pd.DataFrame:
    """Per-item loss ratios of a trace table; see `item_ratios_from_states`."""
    return item_ratios_from_states(item_states(trace))


def loss_ratio_from_states(states: pd.DataFrame, by: Sequence[str] = ("condition",)) -> pd.DataFrame:
    """Loss ratio per step and group (`by`: "condition", or e.g. ("set", "condition")), from `item_states`.

    loss_ratio = (sum over the group's items of the correct option's loss)
                 / (sum over the group's items of the sum of all the item's option losses),
    a ratio of sums, so items with a larger loss weigh more (crossknow's choice: the paper's "ratio of the
    sequence loss for correct answers to the total loss across the four candidate options" does not say how
    items are aggregated; see LOSS_RATIO_DEFINITION). mean_item_ratio is the plain mean of the per-item
    ratios, reported beside it. chance = n_items / sum of the items' K: the ratio when
    all of an item's options have one loss and all items the same loss; exactly 1/K when every item has
    K options. Columns: step, *by, n_items, loss_ratio, mean_item_ratio, chance.
    """
    keys = ["step", *by]
    table = states[keys].copy()
    table["correct_loss"] = states["correct_loss"]
    table["total_loss"] = states["total_loss"]
    table["n_options"] = states["n_options"]
    table["item_ratio"] = states["correct_loss"] / states["total_loss"]
    grouped = table.groupby(keys, sort=True)
    result = grouped.agg(
        n_items=("item_ratio", "size"),
        correct_sum=("correct_loss", "sum"),
        total_sum=("total_loss", "sum"),
        options_sum=("n_options", "sum"),
        mean_item_ratio=("item_ratio", "mean"),
    ).reset_index()
    result["loss_ratio"] = result["correct_sum"] / result["total_sum"]
    result["chance"] = result["n_items"] / result["options_sum"]
    return result[[*keys, "n_items", "loss_ratio", "mean_item_ratio", "chance"]]


def loss_ratio_by_condition(trace: pd.DataFrame, by: Sequence[str] = ("condition",)) -> pd.DataFrame:
    """Loss ratio (ratio of sums) per step and group of a trace table; see `loss_ratio_from_states`."""
    return loss_ratio_from_states(item_states(trace), by)
