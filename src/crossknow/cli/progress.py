"""One progress bar style for every long command."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

if TYPE_CHECKING:
    from crossknow.generation.cached_calls import CostMeter


@contextmanager
def bar(console: Console, description: str) -> Iterator[Callable[..., None]]:
    """A transient progress bar on `console`; yields `update(done, total, label=None)`."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(description, total=None)

        def update(done: int, total: int, label: str | None = None) -> None:
            text = f"{description} {label}" if label else description
            progress.update(task, completed=done, total=total, description=text)

        yield update


def spent(meter: CostMeter) -> str:
    """What a meter has counted, as one line: calls, cache hits, tokens and cost."""
    tokens = meter.prompt_tokens + meter.completion_tokens
    return f"{meter.calls} calls, {meter.cached_calls} cached, {tokens:,} tokens, ${meter.cost_usd:.4f}"


def whole_run(calls: int | None, tokens: int | None, cost_usd: float | None) -> str:
    """What a whole run spent over its invocations (its spend ledger), as one line; 'not recorded' for None."""
    if calls is None or tokens is None or cost_usd is None:
        return "not recorded"
    return f"{calls} calls, {tokens:,} tokens, ${cost_usd:.4f}"


@contextmanager
def stage_bars(console: Console) -> Iterator[Callable[[str, int, int, CostMeter], None]]:
    """One progress bar per stage on `console`, each with the cost so far; yields
    `update(stage, done, total, meter)`."""
    columns = (TextColumn("{task.description:<12}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[spent]}"))
    tasks: dict[str, TaskID] = {}
    with Progress(*columns, console=console) as progress:

        def update(stage: str, done: int, total: int, meter: CostMeter) -> None:
            if stage not in tasks:
                tasks[stage] = progress.add_task(stage, total=total, spent="")
            progress.update(tasks[stage], completed=done, total=total, spent=spent(meter))

        yield update
