"""Which keys of a run's config may differ when the run resumes, and what an older run that lacks a key did (its
default, or a `Before` value), declared on the config's own fields.

A field typed `Annotated[T, VOLATILE]` cannot change a result already written (a batch size, a server's address, a
timeout, a request cache): `RunDir.open` lets it differ on resume. Every other field must equal the run's. A field
of a nested record (a role's `ModelAccess`) is named by its dotted path, `judges.base_url`.
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel


class _Mark:
    """A marker that a field's annotation carries (`Annotated[T, VOLATILE]`)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


VOLATILE = _Mark("VOLATILE")
"""The field cannot change a result already written; it may differ when a run resumes."""
DEFAULT_BEFORE = _Mark("DEFAULT_BEFORE")
"""The field was added after runs were written, and its default is what those runs did: a recorded config without
it is read at its default (`with_defaults`). A field whose default changed what runs do (calibrate_yes) is not so
marked, and an older run is refused."""


class Before(_Mark):
    """The field was added after runs were written, and those runs did `value`, which is not its default: a
    recorded config of a role that takes the field as a key and lacks it reads as `value` (`RoleConfig.recorded`)."""

    def __init__(self, value: Any):
        super().__init__(f"Before({value!r})")
        self.value = value


def before_value(field: Any) -> Any:
    """The value a `Before` mark on `field` (a pydantic FieldInfo) names; None without one."""
    return next((mark.value for mark in field.metadata if isinstance(mark, Before)), None)


def _record_type(annotation: Any) -> type[BaseModel] | None:
    """The record type of a field annotated with one (`R` or `R | None`), else None."""
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def volatile_keys(config_type: type[BaseModel]) -> tuple[str, ...]:
    """The names of `config_type`'s fields typed VOLATILE (inherited ones included), in field order; those of a
    nested record's fields as dotted paths."""
    keys: list[str] = []
    for name, field in config_type.model_fields.items():
        nested = _record_type(field.annotation)
        if VOLATILE in field.metadata:
            keys.append(name)
        elif nested is not None:
            keys.extend(f"{name}.{key}" for key in volatile_keys(nested))
    return tuple(keys)


def flatten(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """`config` with each nested mapping's keys as dotted paths: {'judges': {'base_url': u}} -> {'judges.base_url':
    u}; the form in which `RunDir` compares a config with a run's."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, dict) and value:
            flat |= flatten(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def with_defaults(config_type: type[BaseModel], recorded: dict[str, Any]) -> dict[str, Any]:
    """An older config.yaml's entries with every field typed DEFAULT_BEFORE that they lack at its default, so that
    resuming such a run with the option at its default is the same run (and with any other value, another)."""
    filled = dict(recorded)
    for name, info in config_type.model_fields.items():
        if name not in filled and DEFAULT_BEFORE in info.metadata:
            filled[name] = info.get_default(call_default_factory=True)
    return filled
