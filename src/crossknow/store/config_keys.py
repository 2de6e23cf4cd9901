"""Which keys of a run's config may differ when the run resumes, declared on the config's own fields.

A field typed `Annotated[T, VOLATILE]` cannot change a result already written (a batch size, a server's address, a
timeout, a request cache): `RunDir.open` lets it differ on resume. Every other field must equal the run's.
"""

from __future__ import annotations

from pydantic import BaseModel


class _Mark:
    """A marker that a field's annotation carries (`Annotated[T, VOLATILE]`)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


VOLATILE = _Mark("VOLATILE")
"""The field cannot change a result already written; it may differ when a run resumes."""


def volatile_keys(config_type: type[BaseModel]) -> tuple[str, ...]:
    """The names of `config_type`'s fields typed VOLATILE (inherited ones included), in field order."""
    return tuple(name for name, field in config_type.model_fields.items() if VOLATILE in field.metadata)
