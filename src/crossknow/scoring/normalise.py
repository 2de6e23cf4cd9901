"""Losses under each normalisation, and the prediction they give.

A loss is a negated log-probability divided by a length; the prediction is the option with the
lowest loss, ties broken by the lower index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum


class Normalisation(str, Enum):
    """How an option's summed log-probability becomes a loss."""

    MEAN_TOKEN = "mean_token"
    """-sum / tokens: the AdaXEval loss (mean token cross-entropy)."""
    SUM = "sum"
    """-sum: lm-eval's acc."""
    PER_CHAR = "per_char"
    """-sum / characters of the option's scored text: lm-eval's acc_norm."""
    PER_BYTE = "per_byte"
    """-sum / UTF-8 bytes of the option's scored text."""


@dataclass(frozen=True)
class OptionScore:
    """The numbers of one scored option that every normalisation is computed from."""

    logprob_sum: float
    n_tokens: int
    n_chars: int
    n_bytes: int

    def loss(self, normalisation: Normalisation) -> float:
        """The option's loss under `normalisation` (lower is more likely)."""
        match normalisation:
            case Normalisation.MEAN_TOKEN:
                return -self.logprob_sum / self.n_tokens
            case Normalisation.SUM:
                return -self.logprob_sum
            case Normalisation.PER_CHAR:
                return -self.logprob_sum / self.n_chars
            case Normalisation.PER_BYTE:
                return -self.logprob_sum / self.n_bytes
        raise ValueError(normalisation)


def predict(options: Sequence[OptionScore], normalisation: Normalisation) -> int:
    """Index of the option with the lowest loss; ties go to the lower index."""
    losses = [option.loss(normalisation) for option in options]
    return losses.index(min(losses))
