"""The `crossknow` command line: one sub-command per pipeline.

A user's mistake (bad input, unknown model spec, missing dependency) prints one clear message
and exits with status 2, without a traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from crossknow.cli.progress import bar
from crossknow.errors import CrossknowError

app = typer.Typer(
    help="Measure how language models acquire knowledge in one language and carry it to others.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
errors = Console(stderr=True)


@app.callback()
def root() -> None:
    """crossknow: knowledge acquisition and cross-lingual transfer in language models."""


@app.command()
def evaluate(
    data: str = typer.Option(..., help="Data file (AdaXEval, Pitfalls, ECLEKTIC or crossknow JSONL), or 'sample'."),
    out: Path = typer.Option(..., help="Run directory; run again on it to resume."),
    model: str = typer.Option("default", help="default | hf:PATH_OR_ID[@REV] | gguf:FILE | openai:MODEL"),
    format: str = typer.Option("auto", help="auto | adaxeval | pitfalls | eclektic | jsonl"),
    rule: str = typer.Option("auto", help="auto | adaxeval | lm-eval"),
    limit: int | None = typer.Option(None, help="Score only the first N items (N pairs for Pitfalls)."),
    batch_size: int = typer.Option(8, help="Items per forward pass (halved on CUDA out-of-memory)."),
    device: str = typer.Option("auto", help="auto | cpu | cuda[:N]"),
    dtype: str = typer.Option("float32", help="float32 | bfloat16 | float16 (results are float32)."),
    base_url: str | None = typer.Option(None, help="OpenAI-compatible server URL, for openai: models."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", help="Environment variable holding the API key."),
) -> None:
    """Score every option of every multiple-choice item by its loss; write scores.parquet and metrics.json."""
    from crossknow.cli.tables import metrics_table
    from crossknow.evaluate.pipeline import run_evaluate
    from crossknow.evaluate.records import EvaluateConfig

    config = EvaluateConfig(
        model=model, data=data, format=format, rule=rule, limit=limit, batch_size=batch_size,
        device=device, dtype=dtype, base_url=base_url, api_key_env=api_key_env,
    )
    with bar(errors, "scoring") as update:
        metrics = run_evaluate(config, out, update)
    console.print(metrics_table(metrics))
    invalid = f", {metrics.n_invalid} invalid records not scored (see invalid.jsonl)" if metrics.n_invalid else ""
    console.print(f"{metrics.n_items.get('all', 0)} items in {metrics.seconds:.1f} s{invalid}; run directory: {out}")


def _field_errors(error: ValidationError) -> str:
    return "; ".join(f"--{'-'.join(map(str, e['loc'])).replace('_', '-')}: {e['msg']}" for e in error.errors())


def _quiet_libraries() -> None:
    """Silence transformers' per-load progress bars and advice; crossknow reports progress itself."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        return
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


def main() -> None:
    """Entry point: run the app, turning user errors into one message and exit status 2."""
    _quiet_libraries()
    try:
        app()
    except CrossknowError as error:
        errors.print(f"[red]error:[/red] {escape(str(error))}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except ValidationError as error:
        errors.print(f"[red]error:[/red] {escape(_field_errors(error))}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        errors.print("interrupted: run the same command again to resume where it stopped")
        sys.exit(130)


# Sub-commands defined in their own modules register themselves on `app` when imported.
from crossknow.cli import (  # noqa: E402, F401
    annotate_cmd,
    demo_cmd,
    generate_cmd,
    report_cmd,
    trace_cmd,
    train_cmd,
)
