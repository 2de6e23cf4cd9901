"""The device of local models (`--device`): the values every command accepts, and the check that the device exists.

A mistyped device is refused when the config is read (`Device`, `TrainDevice`), before a run directory is written;
a CUDA device that this machine lacks, when the model is about to load (`resolve_device`), with a CrossknowError
saying what torch sees, instead of torch's error from deep inside the load or, in training, a silent run on the CPU.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator

from crossknow.errors import CrossknowError

DEVICE_HELP = "'auto' (CUDA when present), 'cpu', 'cuda' or 'cuda:N'."
"""The --device help of the commands that score or generate."""

TRAIN_DEVICE_HELP = "'auto' (CUDA when present), 'cpu' or 'cuda' (pick the GPU with CUDA_VISIBLE_DEVICES)."
"""The --device help of the commands that train: transformers' Trainer takes no device index."""


def device_syntax(value: str) -> str:
    """`value` when it is auto, cpu, cuda or cuda:N; ValueError otherwise."""
    if re.fullmatch(r"auto|cpu|cuda(:\d+)?", value) is None:
        raise ValueError(f"expected auto, cpu, cuda or cuda:N, got {value!r}")
    return value


Device = Annotated[str, AfterValidator(device_syntax)]
"""A config field holding a --device value."""

TrainDevice = Literal["auto", "cpu", "cuda"]
"""A training config's --device value."""


def resolve_device(device: str) -> str:
    """'auto' -> 'cuda' when torch sees a CUDA device, else 'cpu'; 'cpu', 'cuda' and 'cuda:N' unchanged
    where this machine has them. CrossknowError for anything else, naming what torch sees."""
    import torch

    try:
        device_syntax(device)
    except ValueError as error:
        raise CrossknowError(f"--device: {error}") from None
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda"):
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        index = int(device.partition(":")[2] or 0)
        if index >= count:
            seen = f"{count} CUDA device{'s' if count != 1 else ''} (cuda:0 to cuda:{count - 1})" if count else (
                f"no CUDA device (torch {torch.__version__})")
            raise CrossknowError(f"--device {device}: torch sees {seen} on this machine; use --device cpu or auto")
    return device
