"""bfloat16's speed with float32's decisions: which items a low-precision score cannot decide.

`crossknow evaluate --dtype bfloat16` (or float16) scores every item in the compute dtype, then
scores again in float32 those items whose decision the compute dtype's error could change, and keeps
float32's numbers for them (crossknow's choice; `--no-float32-decisions` keeps plain low precision).

The bound. An option's summed log-probability in bfloat16 differs from float32's by at most
`BF16_TOKEN_ERROR` nats per scored token: measured with `bench/bf16_error.py` on the embedded Gemma 3
270M over the AdaXEval paper examples and the first 40 pairs of six Cross-Lingual Pitfalls files
(both sides), the largest per-token error was MEASURED_MAX nats; the bound is about twice that.
An item is decided when, under every normalisation, its best option's loss is below every other
option's by more than the two options' error bounds added (each bound is the per-token bound times
the option's tokens, divided by the normalisation's length). An item that is not decided is scored
again in float32. The bound holds for models and inputs like those measured; a model whose bf16
error is larger (`bench/bf16_error.py --model`) would need its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from crossknow.scoring.normalise import Normalisation, OptionScore, option_loss

BF16_TOKEN_ERROR = 0.1
"""Largest error, in nats per scored token, that bfloat16 scoring adds to a summed log-probability."""

LOW_PRECISION = ("bfloat16", "float16")
"""Compute dtypes whose decisions are checked. float16 takes bfloat16's bound: its 10-bit mantissa rounds
8 times finer than bfloat16's 7 bits, so the bound is loose for it, never short."""


def needs_float32(options: Sequence[OptionScore], token_error: float = BF16_TOKEN_ERROR) -> bool:
    """Whether a low-precision score leaves the item's prediction open under some normalisation: its best
    option's loss is within the two options' error bounds of another option's (see the module docstring)."""
    for normalisation in Normalisation:
        losses = [option.loss(normalisation) for option in options]
        errors = [option_loss(normalisation, -token_error * o.n_tokens, o.n_tokens, o.n_chars, o.n_bytes)
                  for o in options]
        best = losses.index(min(losses))
        if any(other != best and losses[other] - losses[best] <= errors[other] + errors[best]
               for other in range(len(options))):
            return True
    return False
