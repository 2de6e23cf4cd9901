"""The tiny training run and trace shared by the training, dynamics and CLI tests (fixtures in tests/conftest.py).

Six English abstracts of the packaged demo corpus (facts f01-f06, 57, 62, 59, 65, 61 and 52 tokens with
BOS and EOS), the embedded model on the CPU, one abstract per sequence cut at 48 tokens (packing none:
the dynamics tests rely on each abstract's opening, which holds its cloze sentence, being trained on
whole), 4 optimizer steps of 2 sequences in one forward pass, only the last decoder block (and the final
norm) trained, a checkpoint every 2 steps. The learning rate is high (1e-3) so that 4 steps move the
trained block measurably. Packed runs: tests/training/test_distributed.py and test_qa_pairs.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

DEMO_DIR = Path(str(resources.files("crossknow") / "samples" / "demo"))
"""The packaged demo data (corpus.jsonl, items.jsonl)."""

TINY_FACTS = ("f01", "f02", "f03", "f04", "f05", "f06")
"""Facts whose English abstracts the tiny run trains on."""

TINY_TOKENS = 356
"""Tokens of the six abstracts with BOS and EOS (57 + 62 + 59 + 65 + 61 + 52), counted with the embedded
tokenizer once and checked again by test_the_step_log."""

TINY_SETTINGS: dict[str, Any] = {
    "max_steps": 4, "save_every_steps": 2, "batch_size": 2, "micro_batch_size": 2, "max_length": 48,
    "packing": "none", "train_layers": "last:1", "learning_rate": 1e-3, "device": "cpu",
}
"""TrainConfig fields of the tiny run besides model, corpus and langs (the rest are the defaults)."""


def write_tiny_corpus(path: Path) -> Path:
    """Write the English documents of TINY_FACTS, copied line by line from the demo corpus, to `path`."""
    lines = [line for line in (DEMO_DIR / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
             if json.loads(line)["id"] in {f"{fact}-en" for fact in TINY_FACTS}]
    assert len(lines) == len(TINY_FACTS)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def tiny_config(corpus: Path, **changes: Any):
    """The tiny run's TrainConfig on `corpus`, with `changes` applied."""
    from crossknow.training.records import TrainConfig

    return TrainConfig(**{"model": "default", "corpus": str(corpus), "langs": ["en"], **TINY_SETTINGS, **changes})


def tiny_cli_args(corpus: Path, out: Path, model: str = "default") -> list[str]:
    """`crossknow train` arguments equivalent to tiny_config(corpus, model=model) writing into `out`."""
    args = ["train", "--model", model, "--corpus", str(corpus), "--out", str(out), "--langs", "en"]
    for name, value in TINY_SETTINGS.items():
        args += [f"--{name.replace('_', '-')}", str(value)]
    return args


def write_items(path: Path, count: int) -> Path:
    """Write the first `count` items of the demo items file (4 per fact: en/ja x cloze/question) to `path`."""
    lines = (DEMO_DIR / "items.jsonl").read_text(encoding="utf-8").splitlines()[:count]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@dataclass(frozen=True)
class TinyTrainRun:
    """A finished tiny training run."""

    out: Path
    """Its run directory."""
    corpus: Path
    """The corpus it trained on."""
    config: Any
    """Its TrainConfig."""
    summary: Any
    """The TrainSummary run_train returned."""


@dataclass(frozen=True)
class TinyTraceRun:
    """A finished trace of the tiny training run (its base model and its 2 checkpoints) on 8 demo items."""

    out: Path
    """Its run directory."""
    items: Path
    """The items file it scored."""
    config: Any
    """Its TraceConfig."""
    table: Any
    """The pyarrow table run_trace returned."""


def checkpoint_tensors(directory: Path) -> dict[str, Any]:
    """Every tensor of a checkpoint directory's safetensors files: one file, or the trained and frozen files of a run
    that trains some layers (crossknow.training.frozen_shard)."""
    from safetensors.torch import load_file

    tensors: dict[str, Any] = {}
    for path in sorted(directory.glob("*.safetensors")):
        tensors |= load_file(str(path))
    return tensors
