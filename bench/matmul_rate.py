"""The machine's matrix-multiply rate for a model's shapes, and the floor time of a piece of work.

Each of a decoder layer's weight shapes and the vocabulary projection is timed as
torch.matmul([tokens x in] @ [in x out]) in a dtype, with torch's default thread count (the one
the crossknow commands run with). The floor time of a job is then
    body_tokens * (seconds per token through all layers' matrices)
    + projected positions * (seconds per position of the vocabulary projection)
    + attention FLOPs / (the layer matrices' rate),
i.e. the job's necessary FLOPs at the rate this machine multiplies matrices of exactly its shapes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from flop_counts import ModelShapes, Work


@dataclass(frozen=True)
class ShapeRate:
    """The measured rate of one matrix shape."""

    name: str
    """The weight's name (q_proj, ..., lm_head)."""
    rows: int
    """Tokens multiplied at once."""
    inner: int
    """The weight's input width."""
    cols: int
    """The weight's output width."""
    seconds_per_row: float
    """Wall-clock seconds per token (row) of the product."""

    @property
    def gflops(self) -> float:
        """Billions of FLOPs per second."""
        return 2 * self.inner * self.cols / self.seconds_per_row / 1e9


@dataclass(frozen=True)
class MatmulRates:
    """The rates of every shape a model's scoring multiplies by, in one dtype."""

    dtype: str
    """torch dtype name."""
    threads: int
    """torch.get_num_threads() during the measurement."""
    layer: list[ShapeRate]
    """One decoder layer's weight shapes."""
    projection: ShapeRate
    """The vocabulary projection."""
    layers: int
    """Decoder layers of the model."""

    def seconds_per_body_token(self) -> float:
        """Seconds of one token through every layer's weight matrices."""
        return self.layers * sum(rate.seconds_per_row for rate in self.layer)

    def layer_gflops(self) -> float:
        """The combined rate of a layer's matrices (FLOPs-weighted)."""
        flops = sum(2 * rate.inner * rate.cols for rate in self.layer)
        return flops / sum(rate.seconds_per_row for rate in self.layer) / 1e9

    def floor_seconds(self, work: Work) -> float:
        """Seconds `work` takes at this machine's matmul rate for the model's shapes."""
        return (
            work.body_tokens * self.seconds_per_body_token()
            + work.projected_positions * self.projection.seconds_per_row
            + work.attention_flops / (self.layer_gflops() * 1e9)
        )

    def summary(self) -> dict[str, float]:
        """Min, max and combined GFLOP/s of the layer shapes, and the projection's GFLOP/s."""
        rates = [rate.gflops for rate in self.layer]
        return {
            "layer_min_gflops": min(rates),
            "layer_max_gflops": max(rates),
            "layer_gflops": self.layer_gflops(),
            "projection_gflops": self.projection.gflops,
        }


def time_matmul(rows: int, inner: int, cols: int, dtype, min_seconds: float) -> float:
    """Seconds per row of [rows x inner] @ [inner x cols], best of repeated runs of >= `min_seconds`."""
    import torch

    generator = torch.Generator().manual_seed(0)
    left = torch.randn(rows, inner, generator=generator).to(dtype)
    right = torch.randn(inner, cols, generator=generator).to(dtype)
    torch.matmul(left, right)  # warm-up: allocation, kernel choice
    best = float("inf")
    for _ in range(3):
        repeats, start = 0, time.perf_counter()
        while True:
            torch.matmul(left, right)
            repeats += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds / 3:
                break
        best = min(best, elapsed / repeats)
    return best / rows


def measure_rates(
    shapes: ModelShapes, dtype_name: str, body_rows: int = 512, projection_rows: int = 128, min_seconds: float = 0.6
) -> MatmulRates:
    """Time every weight shape of `shapes` in `dtype_name` ('float32', 'bfloat16')."""
    import torch

    dtype = getattr(torch, dtype_name)
    with torch.inference_mode():
        layer = [
            ShapeRate(name, body_rows, inner, cols, time_matmul(body_rows, inner, cols, dtype, min_seconds))
            for name, (inner, cols) in shapes.layer_weight_shapes().items()
        ]
        seconds = time_matmul(projection_rows, shapes.hidden, shapes.vocab, dtype, min_seconds)
    projection = ShapeRate("lm_head", projection_rows, shapes.hidden, shapes.vocab, seconds)
    return MatmulRates(dtype_name, torch.get_num_threads(), layer, projection, shapes.layers)
