"""How a command reaches and runs the models of one role: one record, embedded once per role in every command's
config (`model: ModelRole`, `judges: ModelsRole`, ...), its fields declared here alone.

On the command line and in older config.yaml files a role's settings are flat keys (`--judge-base-url`, one
`--device` for every role); `RoleKeys` names them per config, and `upgrade` folds them into the records.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from crossknow.models.device import DEVICE_HELP, Device
from crossknow.models.placement import DeviceMap, parse_max_memory
from crossknow.models.specs import GeneratorBackend, ModelOptions
from crossknow.store.config_keys import VOLATILE, Before, before_value, with_defaults

Dtype = Literal["float32", "bfloat16", "float16", "auto"]
"""The compute dtype of local models ('auto': the dtype the checkpoint was saved in); scores are always float32."""

AttnImplementation = Literal["eager", "sdpa", "flash_attention_2"]
"""transformers' attention kernels of a local model."""

Quantization = Literal["8bit", "4bit"]
"""bitsandbytes' weight formats of a local transformers model: LLM.int8 and NF4 (see crossknow.models.hf_loading)."""


class ModelAccess(BaseModel):
    """How one role's models are reached and run: their server, key variable, device, dtype and patience."""

    model_config = ConfigDict(extra="forbid", frozen=True)  # as every saved record (crossknow.data.schemas.Record)

    base_url: Annotated[str | None, VOLATILE] = Field(
        default=None, description="OpenAI-compatible server of the openai: specs that name none (a spec's own "
        "openai:MODEL@URL wins)."
    )
    api_key_env: Annotated[str, VOLATILE] = Field(
        default="OPENAI_API_KEY", description="Environment variable that holds the API key of the servers."
    )
    device: Device = Field(default="auto", description=DEVICE_HELP)
    dtype: Dtype = Field(default="float32", description="Compute dtype of local models ('auto': the checkpoint's "
                         "own); results are always float32.")
    trust_remote_code: bool = Field(
        default=False, description="Run the modelling code a local checkpoint ships (its config's auto_map); only "
        "for checkpoints you trust."
    )
    attn_implementation: AttnImplementation | None = Field(
        default=None, description="Attention kernel of local models (unset: transformers' choice); the numbers "
        "agree within float tolerance."
    )
    quantization: Quantization | None = Field(
        default=None, description="Load local transformers models with 8-bit (LLM.int8) or 4-bit (NF4) weights "
        "through bitsandbytes (pip install 'crossknow[quantization]'); unset: the weights in the compute dtype. "
        "Changes the scores."
    )
    device_map: DeviceMap | None = Field(
        default=None, description="Place each local transformers model layer by layer over every GPU torch sees, "
        "then the CPU, then disk, by accelerate's strategy (auto, balanced, balanced_low_0, sequential), for a "
        "model that one device cannot hold; the device option stays auto. Unset: the whole model on one device."
    )
    max_memory: str | None = Field(
        default=None, description="The most memory each device may hold under the device map, as DEVICE=SIZE pairs "
        "(0=70GiB,1=70GiB,cpu=200GiB); unset: what each device has."
    )
    generator_backend: Annotated[GeneratorBackend, Before("transformers")] = Field(
        default="auto", description="Engine that generates with a GGUF model (default, gguf:FILE): auto (llama.cpp "
        "on its quantised weights when the model runs on the CPU, llama-cpp-python is installed and no "
        "bitsandbytes quantisation is asked, else transformers), llamacpp, or transformers (the weights dequantised "
        "to --dtype). Scores always come from transformers."
    )
    concurrency: Annotated[int, VOLATILE] = Field(
        default=8, ge=1, description="Requests in flight per server (1 for a llama.cpp server, which answers one at "
        "a time); does not change the output."
    )
    timeout_s: Annotated[float, VOLATILE] = Field(
        default=300.0, gt=0, description="Seconds before one server request is retried."
    )

    def options(self, **run_settings: Any) -> ModelOptions:
        """The engine's options for this role's models (`run_settings`: the command's own, such as batch_size)."""
        return ModelOptions(device=self.device, dtype=self.dtype, base_url=self.base_url,
                            api_key_env=self.api_key_env, concurrency=self.concurrency, timeout_s=self.timeout_s,
                            trust_remote_code=self.trust_remote_code, attn_implementation=self.attn_implementation,
                            quantization=self.quantization, device_map=self.device_map, max_memory=self.max_memory,
                            generator_backend=self.generator_backend, **run_settings)

    @model_validator(mode="after")
    def _placement(self) -> ModelAccess:
        if self.max_memory is not None:
            if self.device_map is None:
                raise ValueError("max_memory limits the devices of a device map: set device_map too")
            parse_max_memory(self.max_memory)
        if self.device_map is not None and self.device != "auto":
            raise ValueError(f"device_map {self.device_map!r} places the model over the devices itself; leave device "
                             f"auto (got {self.device!r})")
        return self


class ModelRole(ModelAccess):
    """A role played by one model: its spec and how it is reached."""

    spec: str = Field(min_length=1, description="The model's spec.")


class ModelsRole(ModelAccess):
    """A role played by several models (judges, simulators, fact detectors): their specs and how they are reached."""

    specs: list[str] = Field(min_length=1, description="The models' specs, in order.")


ACCESS_FIELDS = tuple(ModelAccess.model_fields)
"""The settings of a role, each of which a flat key can give."""

LOADING = ("trust_remote_code", "attn_implementation", "quantization", "device_map", "max_memory")
"""The settings of how a local model loads, beyond device and dtype: the options of every command's local model
roles."""

GENERATING = (*LOADING, "generator_backend")
"""The settings of a role whose local models generate: how they load and which engine decodes a GGUF."""


@dataclass(frozen=True)
class RoleKeys:
    """The flat keys of one role of a config: the role's own field name gives its spec (or specs), and
    `prefix + field` each access field in `own` (`judge_` + `base_url` -> `judge_base_url`)."""

    role: str
    """The config's field that holds the role's record."""
    own: tuple[str, ...] = ()
    """Access fields with a flat key of this role alone."""
    prefix: str = ""
    """What the role's own flat keys start with."""


def flat_targets(roles: tuple[RoleKeys, ...], shared: tuple[str, ...]) -> dict[str, tuple[tuple[str, str], ...]]:
    """Each flat key -> the (role, field) pairs it sets: a role's name its spec field, an own key that role's
    field, a shared key (one flag for every role, such as --device) the field of every role."""
    unknown = ({f for r in roles for f in r.own} | set(shared)) - set(ACCESS_FIELDS)
    if unknown:
        raise TypeError(f"no access fields {sorted(unknown)}")
    targets: dict[str, tuple[tuple[str, str], ...]] = {}
    for keys in roles:
        targets[keys.role] = ((keys.role, ""),)
        targets |= {keys.prefix + field: ((keys.role, field),) for field in keys.own}
    targets |= {field: tuple((keys.role, field) for keys in roles) for field in shared}
    return targets


def role_type(info_annotation: Any) -> type[ModelRole] | type[ModelsRole]:
    """The record type of a role field annotated `ModelRole`, `ModelsRole` or either `| None`."""
    for candidate in (info_annotation, *typing.get_args(info_annotation)):
        if isinstance(candidate, type) and issubclass(candidate, ModelRole | ModelsRole):
            return candidate
    raise TypeError(f"{info_annotation} is not a role record")


def spec_field(record: type[ModelRole] | type[ModelsRole]) -> str:
    """'spec' or 'specs': where a role's flat name puts its value."""
    return "specs" if issubclass(record, ModelsRole) else "spec"


class RoleConfig(BaseModel):
    """A command's config whose models are reached through roles (`ROLES`, `SHARED`); it takes flat keys as well as
    the nested records, so that the command line, Python callers and older config.yaml files all read."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ROLES: ClassVar[tuple[RoleKeys, ...]] = ()
    """The config's roles and their flat keys."""
    SHARED: ClassVar[tuple[str, ...]] = ()
    """Access fields one flat key sets for every role (the command line's one --device, --concurrency, ...)."""

    @classmethod
    def flat_keys(cls) -> dict[str, tuple[tuple[str, str], ...]]:
        """Each flat key of this config -> the (role, field) pairs it sets (see `flat_targets`)."""
        return flat_targets(cls.ROLES, cls.SHARED)

    @classmethod
    def upgrade(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        """`data` with its flat keys folded into the role records: a role given as a spec (or list of specs) becomes
        its record, and each flat key's value goes to the fields it names. An optional role left None or given no
        specs is not played (None) and takes no settings. A field given both flat and nested is an error."""
        data = dict(data)
        records = {keys.role: role_type(cls.model_fields[keys.role].annotation) for keys in cls.ROLES}
        given = {role for role in records if role in data}
        nested: dict[str, dict[str, Any] | None] = {}
        for role, record in records.items():
            info = cls.model_fields[role]
            value = data.pop(role) if role in given else None if info.is_required() else info.get_default()
            if isinstance(value, BaseModel):
                value = value.model_dump(exclude_unset=True)
            elif isinstance(value, list | tuple) and not value and not info.is_required():
                value = None  # an optional role given no models is not played
            elif isinstance(value, str | list | tuple):
                value = {spec_field(record): list(value) if isinstance(value, tuple) else value}
            nested[role] = None if value is None else dict(value)
        for key, pairs in cls.flat_keys().items():
            if key in records or key not in data:
                continue
            value = data.pop(key)
            for role, field in pairs:
                if nested[role] is None:
                    continue
                if field in nested[role]:
                    raise ValueError(f"{key}: {role}.{field} is given twice")
                nested[role][field] = value
        for role, value in nested.items():
            if value is not None:
                defaults = {name: info.default for name, info in records[role].model_fields.items()
                            if not info.is_required()}
                data[role] = defaults | value
            elif role in given:
                data[role] = None
        return with_defaults(cls, data)

    @classmethod
    def recorded(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        """`upgrade` of a config that a run wrote (its config.yaml): a role that takes a `Before`-marked field as a
        key (`generator_backend`) and records no value for it was written before the field existed, and reads as
        what such runs did, so that a resumed run is refused, by the field's name, with anything else."""
        keys = cls.flat_keys()
        upgraded = cls.upgrade(data)
        for name, info in ModelAccess.model_fields.items():
            value = before_value(info)
            if value is None:
                continue
            given_flat = any(key in data for key, pairs in keys.items() if any(f == name for _, f in pairs))
            for role in {role for pairs in keys.values() for role, field in pairs if field == name}:
                given = isinstance(data.get(role), Mapping) and name in data[role]
                if not given and not given_flat and isinstance(upgraded.get(role), dict):
                    upgraded[role] = upgraded[role] | {name: value}
        return upgraded

    @model_validator(mode="before")
    @classmethod
    def _fold_flat_keys(cls, data: Any) -> Any:
        return cls.upgrade(data) if isinstance(data, Mapping) else data
