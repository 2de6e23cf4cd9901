"""Errors that a user can act on. The CLI prints them without a traceback and exits non-zero."""

from __future__ import annotations

from pathlib import Path


class CrossknowError(Exception):
    """A problem with the user's input, configuration or environment, not a bug in crossknow."""


class InputError(CrossknowError):
    """A malformed input file: names the file, the line (1-based, when there is one) and the field."""

    def __init__(self, path: str | Path, message: str, line: int | None = None, field: str | None = None):
        self.path = str(path)
        self.line = line
        self.field = field
        where = self.path + (f", line {line}" if line is not None else "")
        what = f"field '{field}': " if field else ""
        super().__init__(f"{where}: {what}{message}")


class ModelSpecError(CrossknowError):
    """A model spec string that names no known backend."""


class MissingDependencyError(CrossknowError):
    """An optional dependency that a chosen backend or feature needs is not installed."""

    def __init__(self, package: str, extra: str, purpose: str):
        self.package = package
        self.extra = extra
        super().__init__(
            f"{purpose} needs the Python package '{package}', which is not installed. "
            f"Install it with: pip install 'crossknow[{extra}]'"
        )


class UnscorableRequest(CrossknowError):
    """One scoring request that cannot be scored (longer than the model's positions, a tokeniser merge
    across the context/continuation boundary, a non-finite loss). The scoring stage records the item
    in invalid.jsonl with this reason and goes on; `index` is the request's position in the batch."""

    def __init__(self, message: str, index: int | None = None):
        self.index = index
        super().__init__(message)


class PrefixCacheMiss(CrossknowError):
    """Reuse of frozen blocks met a continuation of a replayed context that it never saw, which it cannot
    compute (crossknow.models.frozen_prefix); the caller scores the work again without reuse."""
