"""A command's options built from its pydantic config class, so that each option is defined once:

    @config_command(app, EvaluateConfig)
    def evaluate(config: EvaluateConfig, out: Path = typer.Option(..., help="Run directory.")) -> None: ...

Values are checked by the config class alone: an invalid one is a `CrossknowError` that names the option.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import typer
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from rich.markup import escape

from crossknow.errors import CrossknowError
from crossknow.models.access import ModelAccess, ModelsRole, RoleConfig, role_type, spec_field

Command = TypeVar("Command", bound=Callable[..., Any])

MAX_METAVAR = 24
"""Choices longer than this, written as [a|b|c], are listed in the help instead, to leave the help room."""


def flag_of(field: str) -> str:
    """The option a field name becomes by default: `batch_size` -> `--batch-size`."""
    return "--" + field.replace("_", "-")


def describe_validation_error(error: ValidationError, flags: Mapping[str, str] | None = None) -> str:
    """One line naming each invalid option: '--limit: Input should be greater than or equal to 1'.

    `flags` maps a field name to its option where that is not `flag_of(field)`; an error of the whole
    config (a model validator) is shown without an option."""
    parts = []
    for entry in error.errors():
        location = entry["loc"]
        if not location:
            parts.append(_message(entry))
            continue
        field, path = str(location[0]), ".".join(str(part) for part in location[:2])
        flag = (flags or {}).get(path) or (flags or {}).get(field, flag_of(field))
        inner = "".join(f"[{part}]" for part in location[2 if path in (flags or {}) else 1:])
        parts.append(f"{flag}{inner}: {_message(entry)}")
    return "; ".join(dict.fromkeys(parts))  # a shared option (--device) fails once, not once per role


def _message(entry: Mapping) -> str:
    """An error's message: a validator's own words without pydantic's 'Value error, ' before them."""
    if entry.get("type") == "value_error" and "error" in entry.get("ctx", {}):
        return str(entry["ctx"]["error"])
    return entry["msg"]


@dataclass(frozen=True)
class FieldOption:
    """How one config field is read from the command line."""

    field: str
    """The config field's name (and the command function's parameter name)."""
    flag: str
    """The option, e.g. '--batch-size'."""
    parameter: inspect.Parameter
    """The typer parameter: CLI type, default and help."""
    comma_list: bool
    """True when the value is one comma-separated string that becomes a list."""

    def value(self, given: Any) -> Any:
        """The field's value from what the command line gave."""
        if self.comma_list and given is not None:
            return [part.strip() for part in given.split(",") if part.strip()]
        return given


def _without_none(annotation: Any) -> Any:
    """`X | None` -> X; anything else unchanged."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _default(info: FieldInfo) -> Any:
    """The field's default, `...` (required) when it has none."""
    if info.default is not PydanticUndefined:
        return info.default
    if info.default_factory is not None:
        return info.default_factory()  # type: ignore[call-arg]
    return ...


@functools.cache
def cli_fields(config_cls: type[BaseModel]) -> dict[str, FieldInfo]:
    """The fields the command line sets (built once per config class: each option reads them), in order: the
    config's own, each role record (`RoleConfig`) as its flat keys: the role's name for its spec (or specs), then
    its own access settings; the shared ones after the first role."""
    if not issubclass(config_cls, RoleConfig):
        return dict(config_cls.model_fields)
    roles = {keys.role: keys for keys in config_cls.ROLES}
    fields: dict[str, FieldInfo] = {}
    for name, info in config_cls.model_fields.items():
        if name not in roles:
            fields[name] = info
            continue
        record = role_type(info.annotation)
        spec = record.model_fields[spec_field(record)]
        default = info.get_default() if not info.is_required() else PydanticUndefined
        spec_default = getattr(default, spec_field(record)) if isinstance(default, BaseModel) else default
        if spec_default is None and issubclass(record, ModelsRole):
            spec_default = []  # no models: the optional role is not played
        fields[name] = FieldInfo(annotation=spec.annotation if spec_default is not None else spec.annotation | None,
                                 default=spec_default, description=info.description)
        for access in roles[name].own:
            shared = ModelAccess.model_fields[access]
            described = f"{flag_of(name)}: {shared.description}" if roles[name].prefix else shared.description
            fields[roles[name].prefix + access] = FieldInfo.merge_field_infos(shared, description=described)
        if name == config_cls.ROLES[0].role:
            fields |= {access: ModelAccess.model_fields[access] for access in config_cls.SHARED}
    return fields


def field_option(
    config_cls: type[BaseModel], field: str, *, flag: str | None = None, comma_list: bool = False,
    escape_markup: bool = True,
) -> FieldOption:
    """The command-line option of one field of `config_cls` (see the module's docstring; `cli_fields`)."""
    info = cli_fields(config_cls)[field]
    if not info.description:
        raise TypeError(f"{config_cls.__name__}.{field} has no description to show as its help")
    annotation = _without_none(info.annotation)
    origin = typing.get_origin(annotation)
    default = _default(info)
    metavar, choices_note = None, ""
    if origin is typing.Literal:
        choices = typing.get_args(annotation)
        if not all(isinstance(choice, str) for choice in choices):
            raise TypeError(f"{config_cls.__name__}.{field}: only Literal fields of strings become options")
        # Read as text and checked by the config, so that a wrong value gets the one error format.
        cli_type, metavar = str, "[" + "|".join(choices) + "]"
        if len(metavar) > MAX_METAVAR:
            metavar, choices_note = "<choice>", " One of: " + ", ".join(choices) + "."
    elif comma_list:
        if origin is not list:
            raise TypeError(f"{config_cls.__name__}.{field}: only a list field can be a comma-separated option")
        cli_type = str
        default = default if default is ... or default is None else ",".join(str(value) for value in default)
    elif origin is list or annotation in (str, int, float, bool):
        cli_type = annotation
    else:
        raise TypeError(f"{config_cls.__name__}.{field}: type {annotation} has no command-line form; exclude it")
    if default is None:
        cli_type = cli_type | None
    help_text = info.description + choices_note
    if comma_list:
        help_text += " Comma-separated."
    elif origin is list:
        help_text += " Repeat the option for more."
    help_text = escape(help_text) if escape_markup else help_text
    flag = flag or flag_of(field)
    declaration = f"{flag}/--no-{flag.removeprefix('--')}" if annotation is bool else flag
    option = typer.Option(default, declaration, help=help_text, metavar=metavar)
    parameter = inspect.Parameter(field, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=cli_type)
    return FieldOption(field, flag, parameter, comma_list)


def config_command(
    app: typer.Typer,
    config_cls: type[BaseModel],
    *,
    name: str | None = None,
    flags: Mapping[str, str] | None = None,
    comma_lists: Collection[str] = (),
    exclude: Collection[str] = (),
) -> Callable[[Command], Command]:
    """Register the decorated `function(config, **cli_only)` as command `name` of `app`, its options built
    from `config_cls`'s fields (less `exclude`, which keep their defaults) followed by the function's own
    parameters. The function is returned unchanged, callable with a config. A field becomes `--field-name`
    (`flags` renames one), required when the field is; a list is a repeatable option, or one option of
    comma-separated values when in `comma_lists`; a Literal shows its choices (in the help when they are long);
    a bool is a `--name/--no-name` flag."""
    flags = dict(flags or {})
    fields = cli_fields(config_cls)
    unknown = (set(flags) | set(comma_lists) | set(exclude)) - set(fields)
    if unknown:
        raise TypeError(f"{config_cls.__name__} has no fields {sorted(unknown)}")
    escape_markup = app.rich_markup_mode == "rich"

    def decorate(function: Command) -> Command:
        hints = typing.get_type_hints(function)
        config_param, *own = inspect.signature(function).parameters.values()
        if hints.get(config_param.name) is not config_cls:
            raise TypeError(f"{function.__name__}: the first parameter must be annotated {config_cls.__name__}")
        options = [
            field_option(config_cls, field, flag=flags.get(field), comma_list=field in comma_lists,
                         escape_markup=escape_markup)
            for field in fields if field not in exclude
        ]
        clashes = {p.name for p in own} & {o.field for o in options}
        if clashes:
            raise TypeError(f"{function.__name__}: parameters {sorted(clashes)} are also fields of the config")
        own_params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints[p.name]) for p in own]
        required = [o.parameter for o in options if o.parameter.default.default is ...]
        optional = [o.parameter for o in options if o.parameter.default.default is not ...]
        parameters = [*required, *own_params, *optional]
        all_flags = {o.field: o.flag for o in options}
        if issubclass(config_cls, RoleConfig):  # an error inside a role names the flat key that set it
            for key, pairs in config_cls.flat_keys().items():
                for role, access in pairs:
                    field = access or spec_field(role_type(config_cls.model_fields[role].annotation))
                    all_flags.setdefault(f"{role}.{field}", flags.get(key, flag_of(key)))

        @functools.wraps(function)
        def command(**given: Any) -> Any:
            values = {o.field: o.value(given.pop(o.field)) for o in options}
            try:
                config = config_cls(**values)
            except ValidationError as error:
                raise CrossknowError(describe_validation_error(error, all_flags)) from None
            return function(config, **given)

        command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in parameters}
        app.command(name=name)(command)
        return function

    return decorate
