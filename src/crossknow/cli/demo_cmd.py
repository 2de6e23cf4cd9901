"""`crossknow demo`: the AdaXEval finding in miniature, on the CPU, in minutes. The embedded Gemma 3 270M is
trained on the English abstracts of 40 invented facts (samples/demo/), every checkpoint is scored on English and
Japanese items, and the dynamics report is written; the training settings are the demo's, not the paper's.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import typer

from crossknow.cli.consoles import console, errors
from crossknow.cli.phases import Phases
from crossknow.cli.progress import bar

commands = typer.Typer()
"""This module's command, which `crossknow.cli.app` imports when it is asked for (`crossknow.cli.lazy`)."""

DEMO_DIR = "samples/demo"


def demo_file(name: str) -> Path:
    """Path of a file of the packaged demo (corpus.jsonl, items.jsonl)."""
    return Path(str(resources.files("crossknow") / DEMO_DIR / name))


@commands.command()
def demo(
    out: Path = typer.Option(Path("runs/demo"), help="Run directory (train/ and trace/ inside); run again to resume."),
    epochs: float = typer.Option(6.0, help="Passes over the 40 English abstracts."),
    learning_rate: float = typer.Option(1e-4, help="Peak learning rate (cosine decay to a tenth of it)."),
    train_layers: str = typer.Option("last:4", help="all | blocks | last:N"),
    save_every_steps: int = typer.Option(5, help="Checkpoint interval in optimizer steps (5 steps per epoch)."),
    batch_size: int = typer.Option(8, help="Abstracts per optimizer step."),
    dtype: str = typer.Option("auto", help="Compute dtype of training (mixed) and scoring: auto | bfloat16 | float32 "
                              "(auto: bfloat16 where the CPU computes it in hardware, else float32)."),
) -> None:
    """Train the embedded model on English-only fictional facts, trace its checkpoints, write the report."""
    from crossknow.cli.trace_cmd import trace_with_progress
    from crossknow.dynamics.trace_config import TraceConfig
    from crossknow.models.hf_loading import resolve_dtype
    from crossknow.training.records import TrainConfig
    from crossknow.training.trainer import run_train

    phases = Phases()
    dtype = resolve_dtype(dtype, "cpu")
    train_dir, trace_dir = out / "train", out / "trace"
    train_config = TrainConfig(
        model="default", corpus=str(demo_file("corpus.jsonl")), langs=["en"], recipe="documents",
        epochs=epochs, learning_rate=learning_rate, min_learning_rate=learning_rate / 10, batch_size=batch_size,
        micro_batch_size=batch_size, max_length=128, packing="none", save_every_steps=save_every_steps,
        train_layers=train_layers, seed=0, device="cpu", dtype=dtype,
    )
    with phases("train"), bar(errors, "1/2 training on the English abstracts") as update:
        summary = run_train(train_config, train_dir, update)
    phases.move("train", "load", summary.load_seconds or 0.0)
    console.print(f"trained {summary.steps} steps ({summary.tokens_seen} tokens), checkpoints {summary.checkpoints}")
    trace_config = TraceConfig(
        checkpoints=[str(train_dir)], data=[str(demo_file("items.jsonl"))], train_lang="en", batch_size=16,
        device="cpu", dtype=dtype,
    )
    report = trace_with_progress(trace_config, trace_dir, "2/2 scoring checkpoints", phases)
    console.print(f"demo finished in {phases.line()}; report: {report}", soft_wrap=True, highlight=False)
