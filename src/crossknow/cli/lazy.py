"""Command groups whose commands are imported only when they are asked for.

A group made with `lazy_group(table)` holds the commands of its own Typer and those of `table` (command name ->
module); each module registers its commands on a module-level `typer.Typer` named `commands` and is imported the
first time the group is asked for one of them (`crossknow --help` imports them all). The group module never
imports its command modules, and they never import it.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

import click
import typer
from typer.core import TyperGroup

REGISTRY = "commands"
"""The module-level `typer.Typer` on which a module of a table registers its commands."""


def load_command(module: str, name: str) -> click.Command:
    """Import `module` and return command `name` as typer builds it from the module's `commands` Typer."""
    registry = getattr(importlib.import_module(module), REGISTRY)
    group = typer.main.get_group(registry)
    if name not in group.commands:
        raise TypeError(f"{module} registers no command {name!r} on its `{REGISTRY}`")
    return group.commands[name]


class LazyCommands(MutableMapping[str, click.Command]):
    """A group's commands by name, in order: those registered up front, then those of the table, each
    imported on first access. Listing the names imports nothing."""

    def __init__(self, registered: Mapping[str, click.Command], table: Mapping[str, str]) -> None:
        clashes = set(registered) & set(table)
        if clashes:
            raise TypeError(f"commands {sorted(clashes)} are both registered and in the lazy table")
        self._table = table
        self._commands: dict[str, click.Command | None] = {**registered, **dict.fromkeys(table)}

    def __getitem__(self, name: str) -> click.Command:
        command = self._commands[name]
        if command is None:
            command = self._commands[name] = load_command(self._table[name], name)
        return command

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._commands[name] = command

    def __delitem__(self, name: str) -> None:
        del self._commands[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._commands)

    def __len__(self) -> int:
        return len(self._commands)


def lazy_group(table: Mapping[str, str]) -> type[TyperGroup]:
    """A group class for `typer.Typer(cls=...)` that adds the commands of `table` (command name -> module),
    each module imported when one of its commands is first asked for."""

    class LazyGroup(TyperGroup):
        """A TyperGroup whose commands of `table` are imported on first use."""

        def __init__(self, **attrs: Any) -> None:
            super().__init__(**attrs)
            self.commands = LazyCommands(self.commands, table)

    return LazyGroup
