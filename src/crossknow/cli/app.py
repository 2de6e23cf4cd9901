"""The `crossknow` command line: one sub-command per pipeline.

A user's mistake (bad input, unknown model spec, missing dependency) prints one clear message
and exits with status 2, without a traceback. An unexpected internal error prints one line with the
installed versions and the path of a file holding the traceback, and exits with status 1
(`crossknow.cli.crash`); `--debug` or CROSSKNOW_DEBUG=1 shows the traceback instead.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
from pathlib import Path

import typer
from pydantic import ValidationError
from rich.markup import escape

from crossknow.cli.consoles import console, errors
from crossknow.cli.crash import DEBUG_VARIABLE, crash_message, debug_requested, write_crash_report
from crossknow.cli.lazy import lazy_group
from crossknow.cli.options import config_command, describe_validation_error
from crossknow.cli.progress import bar
from crossknow.errors import CrossknowError
from crossknow.evaluation.records import EvaluateConfig

COMMANDS = {
    "compare": "crossknow.cli.compare_cmd",
    "demo": "crossknow.cli.demo_cmd",
    "generate": "crossknow.cli.generate_cmd",
    "perturb": "crossknow.cli.perturb_cmd",
    "report": "crossknow.cli.report_cmd",
    "trace": "crossknow.cli.trace_cmd",
    "trace-sequences": "crossknow.cli.trace_sequences_cmd",
    "train": "crossknow.cli.train_cmd",
    "annotate": "crossknow.cli.annotate_cmd",
    "eclektic": "crossknow.cli.eclektic_cmd",
    "pitfalls": "crossknow.cli.pitfalls_cmd",
    "fetch": "crossknow.cli.fetch_cmd",
}
"""The commands defined in their own modules (after `evaluate`, defined here), in the order `--help` lists them;
each module is imported only when its command runs or the help lists it (`crossknow.cli.lazy`)."""

app = typer.Typer(
    cls=lazy_group(COMMANDS),
    help="Measure how language models acquire knowledge in one language and carry it to others.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def root(
    debug: bool = typer.Option(
        False, "--debug", help=f"Show the traceback of an internal error (or set {DEBUG_VARIABLE}=1)."
    ),
) -> None:
    """crossknow: knowledge acquisition and cross-lingual transfer in language models."""
    if debug:
        os.environ[DEBUG_VARIABLE] = "1"


@config_command(app, EvaluateConfig)
def evaluate(
    config: EvaluateConfig, out: Path = typer.Option(..., help="Run directory; run again on it to resume.")
) -> None:
    """Score every option of every multiple-choice item by its loss; write scores.parquet and metrics.json."""
    from crossknow.cli.tables import metrics_table
    from crossknow.evaluation.pipeline import run_evaluate

    with bar(errors, "scoring") as update:
        metrics = run_evaluate(config, out, update)
    console.print(metrics_table(metrics))
    invalid = f", {metrics.n_invalid} invalid records not scored (see invalid.jsonl)" if metrics.n_invalid else ""
    console.print(f"{metrics.n_items.get('all', 0)} items in {metrics.seconds:.1f} s{invalid}; run directory: {out}")


def _quiet_libraries() -> None:
    """Silence transformers' per-load progress bars and advice (crossknow reports progress itself) through
    the environment variables both libraries read when they are imported, so that a command that never
    loads transformers never imports it; a user's own setting of either variable wins."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def main() -> None:
    """Entry point: run the app, turning user errors into one message and exit status 2, and internal
    errors into one line and exit status 1."""
    _quiet_libraries()
    # At exit, Python's last garbage collection walks every object of torch, pandas and the model's
    # modules: a third of a second after the work is done. Freezing them first skips that walk;
    # nothing the process wrote depends on it (files are closed and renamed before).
    atexit.register(gc.freeze)
    try:
        app()
    except CrossknowError as error:
        errors.print(f"[red]error:[/red] {escape(str(error))}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except ValidationError as error:
        errors.print(f"[red]error:[/red] {escape(describe_validation_error(error))}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        errors.print("interrupted: run the same command again to resume where it stopped")
        sys.exit(130)
    except Exception as error:  # noqa: BLE001 - the last resort: anything else is a bug or the environment's
        if debug_requested():
            raise
        try:
            report = write_crash_report(error, sys.argv)
        except OSError:
            report = None
        errors.print(f"[red]error:[/red] {escape(crash_message(error, report))}", highlight=False, soft_wrap=True)
        sys.exit(1)
