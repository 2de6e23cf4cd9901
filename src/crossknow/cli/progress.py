"""One progress bar style for every long command."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


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
