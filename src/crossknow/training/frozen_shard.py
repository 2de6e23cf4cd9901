"""Checkpoints that share their frozen weights on disk.

With `--train-layers blocks` or `last:N` most of a model never changes (the demo trains 4 of Gemma 3 270M's 18 blocks,
22M of its 268M parameters), yet each checkpoint would write all of it again. `FrozenShardTrainer` saves the trained
tensors in a file of their own and the frozen ones in `FROZEN_FILE`, written once per process and hard-linked into
every later checkpoint (crossknow's choice; copied where the file system has no hard links). Each checkpoint stays a
standard sharded transformers checkpoint, `model.safetensors.index.json` naming both files, that transformers, `trace`
and any other tool load as usual.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from transformers import PreTrainedModel, Trainer

from crossknow.store.atomic import atomic_write_text

FROZEN_FILE = "model-frozen.safetensors"
"""The file of a checkpoint's frozen tensors, the same bytes in every checkpoint of one process's run."""
TRAINED_FILE = "model-trained.safetensors"
"""The file of a checkpoint's trained tensors (where the Trainer's save wrote one file)."""
INDEX_FILE = "model.safetensors.index.json"
"""transformers' index of a sharded checkpoint: each tensor's file."""
SINGLE_FILE = "model.safetensors"
"""transformers' name of a checkpoint's only weight file."""


def split_state(model: PreTrainedModel) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """(frozen, trained) tensors of `model`'s state dict: the parameters that need no gradient, which no optimizer
    step changes, and the rest; a weight tied to another left out, as `save_pretrained` leaves it out."""
    parameters = dict(model.named_parameters())  # a tied weight once, under the name save_pretrained keeps
    tied = getattr(model, "all_tied_weights_keys", None) or {}
    frozen, trained = {}, {}
    for name, tensor in model.state_dict().items():
        if name in parameters and not parameters[name].requires_grad:
            frozen[name] = tensor
        elif name not in tied:
            trained[name] = tensor
    return frozen, trained


class FrozenShardTrainer(Trainer):
    """transformers' Trainer whose checkpoints share one file of the frozen tensors (see the module docstring)."""

    _frozen_file: Path | None = None
    """The frozen tensors' file this process last wrote or linked."""

    def _save(self, output_dir: str | None = None, state_dict: dict | None = None) -> None:
        model = self.model
        if state_dict is not None or not isinstance(model, PreTrainedModel) or not self.args.should_save:
            return super()._save(output_dir, state_dict)  # sharded engines, adapters, the other ranks
        frozen, trained = split_state(model)
        if not frozen or not trained:
            return super()._save(output_dir, state_dict)
        directory = Path(output_dir if output_dir is not None else self.args.output_dir)
        super()._save(str(directory), trained)
        self._frozen_file = _link_or_write(frozen, directory / FROZEN_FILE, self._frozen_file)
        size = sum(tensor.numel() * tensor.element_size() for tensor in (*frozen.values(), *trained.values()))
        _write_index(directory, frozen, size)


def _link_or_write(frozen: dict[str, torch.Tensor], target: Path, previous: Path | None) -> Path:
    """`target` holding `frozen`: a hard link to `previous` (the same tensors, written earlier by this process) where
    it still exists, else the tensors written; returns `target`."""
    if previous is not None and previous.is_file():
        try:
            os.link(previous, target)
            return target
        except OSError:
            shutil.copyfile(previous, target)
            return target
    save_file({name: tensor.contiguous() for name, tensor in frozen.items()}, str(target), metadata={"format": "pt"})
    return target


def _write_index(directory: Path, frozen: dict[str, torch.Tensor], total_size: int) -> None:
    """The checkpoint's index naming the frozen tensors' file beside the trained ones' (the Trainer's one file,
    renamed to TRAINED_FILE so that transformers reads the index and not that file alone, or its own shards)."""
    index_path = directory / INDEX_FILE
    if index_path.is_file():
        index: dict[str, Any] = json.loads(index_path.read_text(encoding="utf-8"))
    else:
        from safetensors import safe_open

        os.replace(directory / SINGLE_FILE, directory / TRAINED_FILE)
        with safe_open(str(directory / TRAINED_FILE), framework="pt") as handle:
            names = list(handle.keys())
        index = {"metadata": {}, "weight_map": dict.fromkeys(names, TRAINED_FILE)}
    index["weight_map"] = dict(sorted((index["weight_map"] | dict.fromkeys(frozen, FROZEN_FILE)).items()))
    index["metadata"] = index.get("metadata", {}) | {"total_size": total_size}
    atomic_write_text(index_path, json.dumps(index, indent=2) + "\n")
