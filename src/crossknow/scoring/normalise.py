"""Losses under each normalisation, and the prediction they give.

A loss is a negated log-probability divided by a length; the prediction is the option with the
lowest loss, ties broken by the lower index. A loss that is not a finite number (a float16 overflow,
a backend fault) is an error naming the item, never a prediction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from crossknow.errors import CrossknowError

if TYPE_CHECKING:  # pandas only in annotations: importing this module (the CLI does) stays light
    import pandas as pd

Number = TypeVar("Number", float, np.ndarray)


class Normalisation(StrEnum):
    """How an option's summed log-probability becomes a loss."""

    MEAN_TOKEN = "mean_token"
    """-sum / tokens: the AdaXEval loss (mean token cross-entropy)."""
    SUM = "sum"
    """-sum: lm-eval's acc."""
    PER_CHAR = "per_char"
    """-sum / characters of the option's scored text: lm-eval's acc_norm."""
    PER_BYTE = "per_byte"
    """-sum / UTF-8 bytes of the option's scored text."""


def option_loss(
    normalisation: Normalisation, logprob_sum: Number, n_tokens: Number, n_chars: Number, n_bytes: Number
) -> Number:
    """The loss under `normalisation` (lower is more likely), for one option (floats) or many (arrays)."""
    match normalisation:
        case Normalisation.MEAN_TOKEN:
            return -logprob_sum / n_tokens
        case Normalisation.SUM:
            return -logprob_sum
        case Normalisation.PER_CHAR:
            return -logprob_sum / n_chars
        case Normalisation.PER_BYTE:
            return -logprob_sum / n_bytes
    raise ValueError(normalisation)


@dataclass(frozen=True)
class OptionScore:
    """The numbers of one scored option that every normalisation is computed from."""

    logprob_sum: float
    n_tokens: int
    n_chars: int
    n_bytes: int

    def loss(self, normalisation: Normalisation) -> float:
        """The option's loss under `normalisation` (lower is more likely)."""
        return option_loss(normalisation, self.logprob_sum, self.n_tokens, self.n_chars, self.n_bytes)


def predict(options: Sequence[OptionScore], normalisation: Normalisation, item: str = "an item") -> int:
    """Index of the option with the lowest loss; ties go to the lower index. A non-finite loss is an error."""
    losses = [option.loss(normalisation) for option in options]
    if not all(math.isfinite(loss) for loss in losses):
        raise CrossknowError(f"{item}: an option's loss is not a finite number ({losses}); cannot predict")
    return losses.index(min(losses))


def loss_column(frame: pd.DataFrame, normalisation: Normalisation) -> np.ndarray:
    """The loss of every row of a scores table (columns logprob_sum, n_tokens, n_chars, n_bytes)."""
    return option_loss(
        normalisation,
        frame["logprob_sum"].to_numpy(dtype=float),
        frame["n_tokens"].to_numpy(dtype=float),
        frame["n_chars"].to_numpy(dtype=float),
        frame["n_bytes"].to_numpy(dtype=float),
    )


def predicted_options(frame: pd.DataFrame, keys: list[str], loss: str = "loss") -> pd.Series:
    """Per group of `keys` (one item, or one item at one checkpoint): the `option_index` with the lowest
    `loss`, ties to the lower option_index. The same rule as `predict`, vectorised over a table;
    a non-finite loss is an error naming the item."""
    values = frame[loss].to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if bad.any():
        first = frame[bad].iloc[0]
        where = ", ".join(f"{key}={first[key]!r}" for key in keys)
        raise CrossknowError(f"{int(bad.sum())} option loss(es) are not finite numbers, e.g. {where}; cannot predict")
    ordered = frame.sort_values([*keys, "option_index"], kind="stable")
    first_of_min = ordered.groupby(keys, sort=False)[loss].idxmin()
    return frame.loc[first_of_min.to_numpy(), "option_index"].set_axis(first_of_min.index)
