"""Hand-built trace tables whose analyses are known by construction."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass
class Item:
    """One item: `curves[option][i]` is the option's loss at the i-th step given to `build_trace`."""

    item_id: str
    condition: str
    answer: int
    curves: list[list[float]]
    set: str = "set-a"


def build_trace(steps: list[int], items: list[Item]) -> pd.DataFrame:
    """A trace table (the columns `crossknow trace` writes) from per-option loss curves."""
    rows = []
    for position, step in enumerate(steps):
        for item in items:
            kind = "cloze" if item.condition == "memorisation" else "question"
            for option, curve in enumerate(item.curves):
                assert len(curve) == len(steps), (item.item_id, option)
                n_tokens = 4
                rows.append({
                    "step": step, "checkpoint": f"ckpt/step-{step}", "condition": item.condition, "set": item.set,
                    "item_id": item.item_id, "pair_id": None, "lang": "en", "kind": kind, "option_index": option,
                    "is_answer": option == item.answer, "logprob_sum": -curve[position] * n_tokens,
                    "n_tokens": n_tokens, "loss": curve[position],
                })
    return pd.DataFrame(rows)


def flat(value: float, n: int) -> list[float]:
    """A constant curve of n points."""
    return [value] * n
