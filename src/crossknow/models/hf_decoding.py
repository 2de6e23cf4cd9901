"""Batched decoding for transformers causal LMs: left padding, one KV cache, a stop per row.

`decode_batch` left-pads a batch's prompts, with a mask over the padding and positions counted from each row's first
real token, so that padding changes only shapes. A row ends at a stop token or string, the end of its JSON value, a
loop inside a JSON string (`crossknow.models.json_constraint`) or its budget, and leaves the batch and its KV cache.
Each row samples with its own settings; top log-probabilities are the model's own (before temperature and masks).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from crossknow.models.json_constraint import JsonConstraint, repeats_in_open_string
from crossknow.models.placement import input_device

Step = tuple[float, list[int], list[float]]
"""One generated token's log-probability, and the top alternatives' ids and log-probabilities."""


@dataclass
class DecodeRow:
    """One request's decoding state."""

    prompt: list[int]
    """Prompt token ids."""
    budget: int
    """Most tokens to generate."""
    temperature: float = 0.0
    """0 means greedy."""
    sampler: torch.Generator | None = None
    """The seeded generator of a sampled row (None when greedy)."""
    top_logprobs: int = 0
    """Alternatives to keep per generated token."""
    stop_strings: tuple[str, ...] = ()
    """Strings that end the output."""
    constraint: JsonConstraint | None = None
    """The JSON grammar the output must follow."""
    generated: list[int] = field(default_factory=list)
    """Generated token ids (stop tokens excluded)."""
    steps: list[Step] = field(default_factory=list)
    """Per generated token, when `top_logprobs` > 0."""
    finish: str = "length"
    """'stop', 'length', or 'repetition' (a constrained row stopped looping inside a JSON string)."""
    text_end: int | None = None
    """Where a stop string starts in the decoded text (the text is cut there); None without one."""

    def step(self, logits: torch.Tensor, stop_ids: frozenset[int], decode: Callable[[list[int]], str]) -> bool:
        """Choose the next token from this row's float32 `logits`; False once the row has ended."""
        logprobs = torch.log_softmax(logits, dim=-1) if self.top_logprobs > 0 else None
        if self.constraint is not None:
            logits = logits.clone()
            self.constraint.mask_(logits)
        if self.sampler is None:
            token = int(torch.argmax(logits))
        else:
            probs = torch.softmax(logits / self.temperature, dim=-1)
            token = int(torch.multinomial(probs, 1, generator=self.sampler))
        if token in stop_ids:
            self.finish = "stop"
            return False
        if logprobs is not None:
            top = torch.topk(logprobs, self.top_logprobs)
            self.steps.append((float(logprobs[token]), top.indices.tolist(), top.values.tolist()))
        self.generated.append(token)
        if self.constraint is not None:
            self.constraint.advance(token)
            if self.constraint.complete:
                self.finish = "stop"
                return False
            if repeats_in_open_string(decode(self.generated)):
                self.finish = "repetition"
                return False
        if self.stop_strings and self._hit_stop_string(decode):
            return False
        return len(self.generated) < self.budget

    def _hit_stop_string(self, decode: Callable[[list[int]], str]) -> bool:
        text = decode(self.generated)
        found = [i for i in (text.find(s) for s in self.stop_strings) if i >= 0]
        if not found:
            return False
        self.text_end, self.finish = min(found), "stop"
        return True


def decode_batch(
    model: Any, rows: list[DecodeRow], stop_ids: frozenset[int], pad_id: int, decode: Callable[[list[int]], str]
) -> None:
    """Decode every row of `rows` together (see the module docstring); fills each row's output in place."""
    live = [i for i, row in enumerate(rows) if row.budget > 0]
    if not live:
        return
    device = input_device(model)
    width = max(len(rows[i].prompt) for i in live)
    ids = torch.full((len(live), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(live), width), dtype=torch.long)
    for j, i in enumerate(live):
        prompt = rows[i].prompt
        ids[j, width - len(prompt) :] = torch.tensor(prompt)
        mask[j, width - len(prompt) :] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    ids, mask, positions = ids.to(device), mask.to(device), positions.to(device)
    cache = None
    with torch.inference_mode():
        while True:
            out = model(
                input_ids=ids, attention_mask=mask, position_ids=positions, cache=cache,
                use_cache=True, logits_to_keep=1,
            )
            cache = out.cache
            logits = out.logits[:, -1].float()
            keep = [j for j, i in enumerate(live) if rows[i].step(logits[j], stop_ids, decode)]
            if not keep:
                return
            if len(keep) < len(live):
                index = torch.tensor(keep, device=device)
                cache.batch_select_indices(index)
                mask, positions = mask[index], positions[index]
                live = [live[j] for j in keep]
            ids = torch.tensor([[rows[i].generated[-1]] for i in live], device=device)
            mask = torch.cat([mask, mask.new_ones((len(live), 1))], dim=1)
            positions = positions[:, -1:] + 1
