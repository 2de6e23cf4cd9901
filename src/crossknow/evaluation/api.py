"""`crossknow.evaluate(model, items)`: the `evaluate` command as one call from Python, returning its scores.

It runs the command's own pipeline (`run_evaluate`): the same reader checks the items, the same engine scores
them, the same rules predict. A run directory is written only where `out` names one (resumable, as the
command's); otherwise the run lives in a temporary directory that is removed.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from crossknow.data.records_file import records_file
from crossknow.errors import CrossknowError
from crossknow.evaluation.pipeline import run_evaluate
from crossknow.evaluation.records import EvaluateConfig
from crossknow.models.protocol import Scorer
from crossknow.models.registry import ModelOptions
from crossknow.scoring.refine import LOW_PRECISION
from crossknow.store.run_dir import kept_or_temporary


def evaluate(
    model: Any,
    items: str | Path | Iterable[Mapping[str, Any]] | Any,
    *,
    tokenizer: Any = None,
    out: str | Path | None = None,
    **options: Any,
) -> Any:
    """Score every option of every multiple-choice item; a pandas DataFrame, one row per item and option (the
    columns of the command's scores.parquet), with the run's metrics (metrics.json) in `frame.attrs["metrics"]`.

    `model`: a spec ('default', 'hf:ID_OR_PATH', 'gguf:FILE', 'openai:MODEL@URL') or a transformers causal LM
    already loaded (with its `tokenizer`), scored where it lies and in its dtype. `items`: a file the command
    reads (AdaXEval, Pitfalls, ECLEKTIC or crossknow JSONL), crossknow's item records as dicts, or a DataFrame
    of them. `out`: a run directory to write (run again on it to resume); unset, nothing is kept. `options`: the
    command's options by their config names (`rule`, `boundary`, `limit`, `batch_size`, `device`, `dtype`, ...).
    """
    import pandas as pd

    with kept_or_temporary(out) as run_dir:
        data = records_file(items, run_dir)
        if isinstance(model, str):
            config = EvaluateConfig(model=model, data=data, **options)
            metrics = run_evaluate(config, run_dir)
        else:
            config, make_scorer, weights = _loaded(model, tokenizer, data, options)
            metrics = run_evaluate(config, run_dir, make_scorer=make_scorer, weights_of=weights)
        frame = pd.read_parquet(run_dir / "scores.parquet")
    frame.attrs["metrics"] = metrics.model_dump()
    return frame


def _loaded(model: Any, tokenizer: Any, data: str, options: dict[str, Any]) -> tuple[Any, Any, Any]:
    """The config, scorer factory and weight identity of a transformers model the caller loaded: recorded as
    `hf:` its name or path, on its own device and in its own dtype, its weights identified by their bytes."""
    from crossknow.models.hf_loading import DTYPES, dtype_name
    from crossknow.models.hf_scorer import HFScorer
    from crossknow.models.placement import input_device

    if tokenizer is None:
        raise CrossknowError("a loaded model needs its tokenizer: crossknow.evaluate(model, items, tokenizer=...)")
    name = getattr(model, "name_or_path", "") or type(model).__name__
    placed = {"device": input_device(model), "dtype": dtype_name(model.dtype)}
    clash = {key: value for key, value in options.items() if key in placed and value != placed[key]}
    if clash:
        raise CrossknowError(f"the loaded model is on {placed['device']} in {placed['dtype']}; move or cast it "
                             f"before the call instead of passing {clash}")
    config = EvaluateConfig(model=f"hf:{name}", data=data, **(options | placed))
    if hasattr(model, "hf_device_map") and config.float32_decisions and placed["dtype"] in LOW_PRECISION:
        raise CrossknowError(f"the loaded model is placed by a device map in {placed['dtype']}, and crossknow cannot "
                             "copy it into float32 for float32 decisions: pass float32_decisions=False, or a spec "
                             "with device_map to load it again")

    def make_scorer(spec: str, run: ModelOptions) -> Scorer:
        """The model as loaded; a float32 copy where evaluate asks for one (float32 decisions)."""
        scored = model if run.dtype == placed["dtype"] else copy.deepcopy(model).to(DTYPES[run.dtype])
        return HFScorer(name, model_id=name, device=run.device, dtype=run.dtype, batch_size=run.batch_size,
                        loaded=(tokenizer, scored.eval()))

    return config, make_scorer, lambda spec: tensors_hash(model)


def tensors_hash(model: Any) -> str:
    """SHA-256 of a loaded model's parameters and buffers (names, dtypes, shapes and bytes, in state-dict order):
    the identity of weights that may exist only in memory; weights a device map offloads are read where accelerate
    keeps them."""
    import torch

    from crossknow.models.placement import offloaded

    state = model.state_dict()
    if offloaded(model):
        from accelerate.utils.modeling import get_state_dict_offloaded_model

        present = get_state_dict_offloaded_model(model)
        state = {name: present.get(name, tensor) for name, tensor in state.items()}
    digest = hashlib.sha256()
    for name, tensor in state.items():
        value = tensor.detach().cpu().contiguous()
        digest.update(f"{name}|{value.dtype}|{tuple(value.shape)}|".encode())
        digest.update(value.reshape(-1).view(torch.uint8).numpy().tobytes())
    return f"memory:sha256:{digest.hexdigest()}"
