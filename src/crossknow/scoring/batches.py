"""Score the options of multiple-choice items batch by batch, for every pipeline that scores items."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from crossknow.data.schemas import MCItem
from crossknow.models.protocol import Scorer, ScoreResult
from crossknow.scoring.rules import Rule, option_requests


@dataclass(frozen=True)
class ScoredOption:
    """One option of one item, scored."""

    index: int
    """Position of the option in the item."""
    norm_text: str
    """The text the rule counts characters and bytes of (see `OptionRequest.norm_text`)."""
    result: ScoreResult

    @property
    def mean_loss(self) -> float:
        """Mean token cross-entropy of the scored continuation (the AdaXEval loss)."""
        return -self.result.logprob_sum / self.result.n_tokens


def score_in_batches(
    scorer: Scorer, items: Sequence[MCItem], rule: Rule, batch_size: int
) -> Iterator[list[tuple[MCItem, list[ScoredOption]]]]:
    """Yield, for each batch of `batch_size` items in order, every item with its scored options."""
    for start in range(0, len(items), max(batch_size, 1)):
        batch = items[start : start + batch_size]
        per_item = [option_requests(item, rule) for item in batch]
        results = scorer.score([option.request for options in per_item for option in options])
        scored, offset = [], 0
        for item, options in zip(batch, per_item):
            scored.append((item, [ScoredOption(i, o.norm_text, results[offset + i]) for i, o in enumerate(options)]))
            offset += len(options)
        yield scored
