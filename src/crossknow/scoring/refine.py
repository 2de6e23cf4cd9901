"""bfloat16's speed with float32's decisions: which items a low-precision score cannot decide.

`crossknow evaluate --dtype bfloat16` (or float16) scores again in float32, keeping float32's numbers, the items whose
decision the compute dtype's error could change (crossknow's choice; `--no-float32-decisions` keeps low precision).
An item is decided when, under every normalisation, its best option beats every other by more than the two options'
bounds: `BF16_ERROR` (measured, with crossknow's margin: docs/speed.md) x sqrt(tokens) / the normalisation's length.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from crossknow.scoring.normalise import Normalisation, OptionScore, option_loss

BF16_ERROR = 0.63
"""Bound on the error, in nats per square root of the scored tokens, that bfloat16 scoring adds to an option's
summed log-probability (about 1.5 times the largest measured, 0.4213; see docs/speed.md)."""

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
