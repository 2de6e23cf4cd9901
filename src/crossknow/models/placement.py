"""One model over several devices (`--device-map`, `--max-memory`): transformers places it through accelerate, layer
by layer, over every GPU torch sees, then the CPU, then disk.

crossknow's fast paths read some weights themselves (the logit head, the checkpoint switch), so they ask here where
a module computes (`execution_device`) and whether its weights are offloaded (`offloaded`): accelerate keeps an
offloaded module's weights on the meta device and brings them in for each call.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

DeviceMap = Literal["auto", "balanced", "balanced_low_0", "sequential"]
"""accelerate's placements (transformers' `device_map` strategies): 'auto' and 'balanced' spread the layers evenly
over the GPUs, 'balanced_low_0' leaves GPU 0 the most room (for generation's buffers), 'sequential' fills GPU 0
first."""

_SIZE = re.compile(r"\d+(\.\d+)?(KiB|MiB|GiB|TiB|KB|MB|GB|TB)")
_DEVICE = re.compile(r"(cuda:)?(\d+)|cpu")


def parse_max_memory(text: str) -> dict[int | str, str]:
    """`0=70GiB,1=70GiB,cpu=200GiB` as accelerate's max_memory ({0: '70GiB', 1: '70GiB', 'cpu': '200GiB'}); a device
    is N, cuda:N or cpu. ValueError naming the part that is not DEVICE=SIZE."""
    limits: dict[int | str, str] = {}
    for part in text.split(","):
        device, _, size = (piece.strip() for piece in part.partition("="))
        named = _DEVICE.fullmatch(device)
        if named is None or _SIZE.fullmatch(size) is None:
            raise ValueError(f"expected DEVICE=SIZE pairs such as 0=70GiB,cpu=200GiB (DEVICE: N, cuda:N or cpu; SIZE "
                             f"in KiB, MiB, GiB, TiB, KB, MB, GB or TB), got {part.strip()!r}")
        key: int | str = int(named.group(2)) if named.group(2) is not None else "cpu"
        if key in limits:
            raise ValueError(f"device {device!r} is given twice")
        limits[key] = size
    return limits


def execution_device(module: Any) -> str:
    """The device `module` computes on: accelerate's execution device where a device map placed it, else the
    device of its first parameter."""
    import torch

    device = getattr(getattr(module, "_hf_hook", None), "execution_device", None)
    if device is None:
        device = next(module.parameters()).device
    return str(torch.device(device))


def input_device(model: Any) -> str:
    """Where a transformers causal LM takes its token ids: where its input embeddings compute (a device map's first
    device)."""
    return execution_device(model.get_input_embeddings())


@contextmanager
def weights_present(module: Any) -> Iterator[None]:
    """`module`'s own weights on its execution device for the duration: accelerate brings an offloaded module's in and
    sends them back after; any other module stays as it is (accelerate is imported only for a placed one)."""
    if not hasattr(module, "_hf_hook"):
        yield
        return
    from accelerate.utils import align_module_device

    with align_module_device(module):
        yield


def offloaded(model: Any) -> bool:
    """Whether some weights of `model` are offloaded (held on the meta device between calls)."""
    return any(parameter.device.type == "meta" for parameter in model.parameters())


def placement_arguments(device_map: str, max_memory: str | None) -> dict[str, Any]:
    """transformers' `from_pretrained` arguments that place a model by `device_map` within `max_memory` (None: what
    each device has), with a new folder for the weights it sends to disk (crossknow's choice: under TMPDIR, removed
    with the model by `remove_with`, since accelerate writes them afresh at every load)."""
    return {"device_map": device_map, "max_memory": parse_max_memory(max_memory) if max_memory else None,
            "offload_folder": tempfile.mkdtemp(prefix="crossknow-offload-")}


def remove_with(model: Any | None, arguments: dict[str, Any]) -> None:
    """Remove the offload folder of `placement_arguments` when `model` is collected or the process exits; at once
    when no model was loaded."""
    folder = arguments["offload_folder"]
    if model is None:
        shutil.rmtree(folder, ignore_errors=True)
    else:
        weakref.finalize(model, shutil.rmtree, folder, True)
