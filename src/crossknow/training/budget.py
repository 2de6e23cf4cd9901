"""Token budgets of C_K and C_T (section 6.1(3): 0.5B tokens each), and the mix of the two.

crossknow's rules, where the paper says no more: a part's training texts are drawn in an order shuffled with
`random.Random(f"{seed}:budget:{part}")` and taken while the budget lasts; a token is one the model trains on
(special tokens, text, EOS); the text that would overrun the budget is cut to the tokens left, so the budget is
met exactly; a budget larger than the part is an error that says how many tokens the part holds.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from crossknow.errors import CrossknowError
from crossknow.training.records import Part, PartTokens, TrainConfig, TrainedText, TrainingExample


@dataclass(frozen=True)
class TokenisedText:
    """A training text and the token ids it contributes."""

    example: TrainingExample
    full_tokens: int
    """Tokens of the whole text (special tokens and EOS included)."""
    ids: list[int]
    """The ids trained on: the first len(ids) of the whole text's."""

    def trained(self) -> TrainedText:
        """The train_data.jsonl record of this text."""
        return TrainedText(**self.example.model_dump(), full_tokens=self.full_tokens, tokens=len(self.ids))


def tokenise(examples: Sequence[TrainingExample], tokenizer: Any, cut_at: int | None) -> list[TokenisedText]:
    """Each text with the tokenizer's special tokens and an end-of-sequence token; cut at `cut_at` tokens
    when given (packing 'none', where each text is one sequence)."""
    texts = []
    for example in examples:
        ids = tokenizer(example.text, add_special_tokens=True)["input_ids"] + [tokenizer.eos_token_id]
        texts.append(TokenisedText(example, len(ids), ids[:cut_at] if cut_at else ids))
    return texts


def take_budget(texts: Sequence[TokenisedText], budget: int | None, seed: int, part: Part) -> tuple[
    list[TokenisedText], PartTokens
]:
    """The texts of `part` that fill `budget` tokens exactly (all of them without a budget), and the count."""
    total = sum(len(text.ids) for text in texts)
    if budget is None:
        return list(texts), PartTokens(texts_built=len(texts), tokens_built=total, budget=None, texts=len(texts),
                                       tokens=total, cut=0)
    if budget > total:
        raise CrossknowError(
            f"--tokens-{part}: a budget of {budget:,} tokens, but the {part} corpus holds {total:,} tokens "
            f"in {len(texts):,} texts"
        )
    order = list(range(len(texts)))
    random.Random(f"{seed}:budget:{part}").shuffle(order)
    taken: list[TokenisedText] = []
    left = budget
    for index in order:
        if left == 0:
            break
        text = texts[index]
        taken.append(TokenisedText(text.example, text.full_tokens, text.ids[:left]))
        left -= len(taken[-1].ids)
    cut = int(len(taken[-1].ids) < len(texts[order[len(taken) - 1]].ids))
    return taken, PartTokens(texts_built=len(texts), tokens_built=total, budget=budget, texts=len(taken),
                             tokens=budget, cut=cut)


def mix(parts: Sequence[Sequence[TokenisedText]], seed: int) -> list[TokenisedText]:
    """The parts concatenated and shuffled with `random.Random(seed)` (the paper shuffles C_K and C_T together)."""
    mixed = [text for part in parts for text in part]
    random.Random(seed).shuffle(mixed)
    return mixed


def budgeted_mix(
    config: TrainConfig, parts: Mapping[Part, Sequence[TrainingExample]], tokenizer: Any
) -> tuple[list[TokenisedText], dict[str, PartTokens]]:
    """Every part tokenised and sampled to its budget, then the mix; with each part's counts."""
    cut_at = config.max_length if config.packing == "none" else None
    budgets: dict[Part, int | None] = {"knowledge": config.tokens_knowledge, "transfer": config.tokens_transfer}
    taken: list[list[TokenisedText]] = []
    counts: dict[str, PartTokens] = {}
    for part, examples in parts.items():
        texts, counts[part] = take_budget(tokenise(examples, tokenizer, cut_at), budgets[part], config.seed, part)
        taken.append(texts)
    return mix(taken, config.seed), counts
