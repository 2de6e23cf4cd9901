"""`crossknow train`: continual pretraining with the paper's data recipes."""

from __future__ import annotations

from pathlib import Path

import typer

from crossknow.cli.app import app, console, errors
from crossknow.cli.progress import bar


@app.command()
def train(
    corpus: Path = typer.Option(..., help="Knowledge corpus C_K: JSONL documents (id, lang, text, metadata)."),
    out: Path = typer.Option(..., help="Run directory; run again on it to resume from the newest checkpoint."),
    model: str = typer.Option("default", help="default | hf:PATH_OR_ID[@REV]"),
    langs: str = typer.Option("en", help="Comma-separated languages of C_K documents to train on."),
    recipe: str = typer.Option("documents", help="C_K recipe: documents | instruction"),
    transfer_corpus: Path | None = typer.Option(None, help="Transfer corpus C_T (JSONL documents)."),
    transfer_recipe: str = typer.Option("none", help="C_T recipe: none | documents | translation | romanisation | roman2en"),
    epochs: float = typer.Option(1.0, help="Passes over the mixed corpus."),
    max_steps: int | None = typer.Option(None, help="Optimizer steps (overrides --epochs)."),
    learning_rate: float = typer.Option(2e-5, help="Peak learning rate, cosine-decayed to --min-learning-rate."),
    min_learning_rate: float = typer.Option(2e-6, help="Final learning rate."),
    warmup_ratio: float = typer.Option(0.0, help="Fraction of steps of linear warm-up."),
    weight_decay: float = typer.Option(0.1, help="AdamW weight decay."),
    max_grad_norm: float = typer.Option(1.0, help="Gradient clipping norm."),
    batch_size: int = typer.Option(8, help="Sequences per device per forward pass."),
    grad_accum: int = typer.Option(1, help="Forward passes per optimizer step."),
    max_length: int = typer.Option(512, help="Tokens per sequence (longer texts are cut)."),
    save_every_steps: int | None = typer.Option(None, help="Checkpoint every N optimizer steps."),
    save_every_tokens: int | None = typer.Option(None, help="Checkpoint every N training tokens."),
    train_layers: str = typer.Option("all", help="all | blocks | last:N"),
    seed: int = typer.Option(0, help="Seed of data order, template draws and shuffling."),
    device: str = typer.Option("auto", help="auto | cpu | cuda"),
    dtype: str = typer.Option("float32", help="float32 | bfloat16 (mixed precision, GPU)"),
) -> None:
    """Continually pretrain a causal LM; write checkpoints, the per-step loss log and the training texts."""
    from crossknow.training.records import TrainConfig
    from crossknow.training.trainer import run_train

    config = TrainConfig(
        model=model, corpus=str(corpus), langs=[lang.strip() for lang in langs.split(",") if lang.strip()],
        recipe=recipe, transfer_corpus=str(transfer_corpus) if transfer_corpus else None,
        transfer_recipe=transfer_recipe, epochs=epochs, max_steps=max_steps, learning_rate=learning_rate,
        min_learning_rate=min_learning_rate, warmup_ratio=warmup_ratio, weight_decay=weight_decay,
        max_grad_norm=max_grad_norm, batch_size=batch_size, grad_accum=grad_accum, max_length=max_length,
        save_every_steps=save_every_steps, save_every_tokens=save_every_tokens, train_layers=train_layers,
        seed=seed, device=device, dtype=dtype,
    )
    with bar(errors, "training") as update:
        summary = run_train(config, out, update)
    console.print(
        f"{summary.steps} steps, {summary.tokens_seen} tokens, {len(summary.checkpoints)} checkpoints "
        f"({summary.trainable_parameters:,} of {summary.total_parameters:,} parameters trained) "
        f"in {summary.seconds:.0f} s; run directory: {out}", soft_wrap=True,
    )
