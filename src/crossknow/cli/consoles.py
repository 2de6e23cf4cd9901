"""The two consoles every command prints to: results on stdout, progress, warnings and errors on stderr."""

from __future__ import annotations

from rich.console import Console

console = Console()
"""Results: tables, paths of what was written."""
errors = Console(stderr=True)
"""Progress bars, warnings and error messages."""
