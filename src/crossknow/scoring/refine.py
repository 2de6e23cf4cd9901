"""bfloat16's speed with float32's decisions: which items a low-precision score cannot decide.

`crossknow evaluate --dtype bfloat16` (or float16) scores every item in the compute dtype, then
scores again in float32 those items whose decision the compute dtype's error could change, and keeps
float32's numbers for them (crossknow's choice; `--no-float32-decisions` keeps plain low precision).

The bound. bfloat16 moves an option's summed log-probability away from float32's by an error that grows
with its tokens about as a random walk does. `bench/bf16_error.py` (the embedded Gemma 3 270M, float32
against bfloat16) measured the largest |error| per square root of the option's tokens:

- 0.2226 on a 2-core AMD CPU with AVX2 only, where torch emulates bfloat16 (`--pairs 3`: 76 items, 304
  options: the AdaXEval paper examples and the first 3 pairs of six Cross-Lingual Pitfalls files, both sides);
- 0.4213 on a 2-core AMD CPU with AVX-512 and avx512_bf16, bfloat16 in hardware, on the same 76 items
  (median per-token error 0.016 nats; 4 items' bfloat16 predictions differed from float32's);
- 0.3193 on that CPU on 400 items of the AdaXEval release (`--items`: bench/release_sample.py with
  `--per-file 100 --seed 1`, lm-eval's rule; 16 items' bfloat16 predictions differed).

`BF16_ERROR` is about 1.5 times the largest (crossknow's choice of margin). An item is decided when,
under every normalisation, its best option's loss is below every other option's by more than the two
options' bounds added (an option's bound: `BF16_ERROR` times the square root of its tokens, divided by
the normalisation's length); an item that is not decided is scored again in float32. With a model as weak
as the 270M (options' losses close together) that is most items: 27 of the 40 paper examples, and every
item whose bfloat16 prediction differed from float32's was among them. The re-scoring then costs more
than bfloat16 saves (docs/speed.md): on such a model `--dtype float32` is the faster way to float32's
decisions. The bound holds for models and inputs like those measured; `bench/bf16_error.py --model SPEC`
measures another model's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from crossknow.scoring.normalise import Normalisation, OptionScore, option_loss

BF16_ERROR = 0.63
"""Bound on the error, in nats per square root of the scored tokens, that bfloat16 scoring adds to an option's
summed log-probability (about 1.5 times the largest measured, 0.4213; see the module docstring)."""

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
