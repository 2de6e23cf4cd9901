"""bfloat16's speed with float32's decisions: which items a low-precision score cannot decide.

`crossknow evaluate --dtype bfloat16` (or float16) scores every item in the compute dtype, then
scores again in float32 those items whose decision the compute dtype's error could change, and keeps
float32's numbers for them (crossknow's choice; `--no-float32-decisions` keeps plain low precision).

The bound. bfloat16 moves an option's summed log-probability away from float32's by an error that grows
with its tokens about as a random walk does: `bench/bf16_error.py --pairs 3` (the embedded Gemma 3 270M,
float32 against bfloat16 on a 2-core AMD CPU; 76 items, 304 options: the AdaXEval paper examples and
the first 3 pairs of six Cross-Lingual Pitfalls files, both sides) measured at most 0.2226 nats times
the square root of the option's tokens (the largest summed error 0.67 nats, over 28 tokens; the median
per-token error 0.015). `BF16_ERROR` is about 1.5 times that. An item is decided when, under every
normalisation, its best option's loss is below every other option's by more than the two options'
bounds added (an option's bound: `BF16_ERROR` times the square root of its tokens, divided by the
normalisation's length); an item that is not decided is scored again in float32. On the measured
items it left 35 of 76 open, and the 1 item whose bfloat16 prediction differed from float32's was
among them. With a model as weak as the 270M (options' losses close together) that is many: the
re-scoring can cost more than bfloat16 saves (docs/speed.md). The bound holds for models and inputs
like those measured; `bench/bf16_error.py --model SPEC` measures another model's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from crossknow.scoring.normalise import Normalisation, OptionScore, option_loss

BF16_ERROR = 0.33
"""Bound on the error, in nats per square root of the scored tokens, that bfloat16 scoring adds to an option's
summed log-probability (about 1.5 times the largest measured; see the module docstring)."""

LOW_PRECISION = ("bfloat16", "float16")
"""Compute dtypes whose decisions are checked. float16 takes bfloat16's bound: its 10-bit mantissa rounds
8 times finer than bfloat16's 7 bits, so the bound is loose for it, never short."""


def needs_float32(options: Sequence[OptionScore], error: float = BF16_ERROR) -> bool:
    """Whether a low-precision score leaves the item's prediction open under some normalisation: its best
    option's loss is within the two options' error bounds of another option's (see the module docstring)."""
    for normalisation in Normalisation:
        losses = [option.loss(normalisation) for option in options]
        errors = [option_loss(normalisation, -error * math.sqrt(o.n_tokens), o.n_tokens, o.n_chars, o.n_bytes)
                  for o in options]
        best = losses.index(min(losses))
        if any(other != best and losses[other] - losses[best] <= errors[other] + errors[best]
               for other in range(len(options))):
            return True
    return False
