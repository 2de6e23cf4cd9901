"""Training batches: token sequences with their position ids, padded on the right, with no attention mask.

Position ids restart at 0 where a text starts, so transformers builds a block-diagonal causal mask; padding is a
block of its own, out of the loss, as is the first token of every block; `use_cache=False` goes with every batch
(a model that builds a key-value cache skips the packed-sequence detection). Right padding keeps a sequence's loss
what it is alone, so N processes train as one (docs/distributed.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

IGNORED_LABEL = -100
"""Label of the positions the loss leaves out (transformers' convention)."""


@dataclass(frozen=True)
class SequenceCollator:
    """Batches `{"input_ids": [...], "position_ids": [...]}` rows into right-padded tensors."""

    pad_token_id: int
    """Token id written into the padding. transformers' Trainer counts the tokens that differ from the
    tokenizer's padding id as the non-padding tokens seen, so this is that id."""

    def __call__(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """input_ids, position_ids, labels (the ids; IGNORED_LABEL on padding and at position 0) and
        use_cache=False."""
        import torch

        width = max(len(row["input_ids"]) for row in rows)
        input_ids = torch.full((len(rows), width), self.pad_token_id, dtype=torch.long)
        position_ids = torch.zeros((len(rows), width), dtype=torch.long)
        real = torch.zeros((len(rows), width), dtype=torch.bool)
        for index, row in enumerate(rows):
            length = len(row["input_ids"])
            if len(row["position_ids"]) != length:
                raise ValueError(f"row {index}: {length} input ids but {len(row['position_ids'])} position ids")
            input_ids[index, :length] = torch.tensor(row["input_ids"], dtype=torch.long)
            position_ids[index, :length] = torch.tensor(row["position_ids"], dtype=torch.long)
            position_ids[index, length:] = torch.arange(width - length)
            real[index, :length] = True
        labels = input_ids.masked_fill(~real | (position_ids == 0), IGNORED_LABEL)
        return {"input_ids": input_ids, "position_ids": position_ids, "labels": labels, "use_cache": False}


def pad_token_id(tokenizer: Any) -> int:
    """The tokenizer's padding id, else its end-of-sequence id, else 0. (Without a padding id in the
    tokenizer, transformers' Trainer counts padding among the tokens seen.)"""
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if candidate is not None:
            return int(candidate)
    return 0
