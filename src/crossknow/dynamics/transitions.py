"""Instance transitions between two checkpoints (short paper, Fig. 4): each item is right or wrong at the first
and at the last checkpoint compared (right: its lowest-loss option, ties to the lower option_index, is the
answer): retained (right -> right), acquired (wrong -> right), forgotten (right -> wrong), unacquired (wrong -> wrong).
"""

from __future__ import annotations

import pandas as pd

from crossknow.dynamics.table import ITEM_KEY, condition_order, item_states, resolve_steps

TRANSITIONS = ["retained", "acquired", "forgotten", "unacquired"]
"""The four transition types, in the order tables and figures show them."""

_NAMES = {(True, True): "retained", (False, True): "acquired", (True, False): "forgotten", (False, False): "unacquired"}


def transitions_from_states(
    states: pd.DataFrame, first_step: int | None = None, last_step: int | None = None
) -> pd.DataFrame:
    """Per item: its transition between `first_step` and `last_step` (default: the first and the last
    checkpoint), from `item_states` output.

    Columns: set, item_id, condition, correct_first, correct_last, transition (one of TRANSITIONS).
    Raises TraceTableError when a step is not in the trace, when first_step >= last_step, or when the
    trace has a single checkpoint.
    """
    first, last = resolve_steps(states["step"], first_step, last_step)
    columns = [*ITEM_KEY, "condition", "correct"]
    before = states.loc[states["step"] == first, columns].rename(columns={"correct": "correct_first"})
    after = states.loc[states["step"] == last, [*ITEM_KEY, "correct"]].rename(columns={"correct": "correct_last"})
    table = before.merge(after, on=ITEM_KEY, how="inner", validate="one_to_one")
    table["transition"] = [
        _NAMES[(bool(a), bool(b))] for a, b in zip(table["correct_first"], table["correct_last"], strict=True)
    ]
    return table.sort_values(ITEM_KEY, kind="stable").reset_index(drop=True)


def item_transitions(trace: pd.DataFrame, first_step: int | None = None, last_step: int | None = None) -> pd.DataFrame:
    """Per-item transitions of a trace table; see `transitions_from_states`."""
    return transitions_from_states(item_states(trace), first_step, last_step)


def count_transitions(transitions: pd.DataFrame) -> pd.DataFrame:
    """Counts per condition from `transitions_from_states` output.

    Columns: condition, n_items, retained, acquired, forgotten, unacquired (counts; the four sum to
    n_items, and a type no item has counts 0). Conditions in `condition_order`.
    """
    counts = pd.crosstab(transitions["condition"], transitions["transition"])
    counts = counts.reindex(index=condition_order(counts.index), columns=TRANSITIONS, fill_value=0).astype(int)
    counts.insert(0, "n_items", counts.sum(axis=1).astype(int))
    counts.columns.name = None
    counts.index.name = "condition"
    return counts.reset_index()


def transition_counts(trace: pd.DataFrame, first_step: int | None = None, last_step: int | None = None) -> pd.DataFrame:
    """Transition counts per condition of a trace table between two steps (default: first and last
    checkpoint); see `count_transitions` and `transitions_from_states`."""
    return count_transitions(item_transitions(trace, first_step, last_step))
