"""What a model backend is given and how it registers: the parsed spec, the options of scorers and generators, where
a local spec's weights are, and the table of backends that `register_backend` fills (read by models/registry.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from crossknow.errors import CrossknowError, ModelSpecError
from crossknow.models.generator import Generator
from crossknow.models.protocol import Scorer


@dataclass(frozen=True)
class Backend:
    """One spec kind's backend, as `register_backend` recorded it."""

    kind: str
    """The spec's prefix before ':' (or the whole spec, for a `bare` kind such as `default`)."""
    usage: str
    """How a spec of this kind is written, e.g. 'hf:PATH_OR_ID[@REVISION]'."""
    form: str
    """What a scorer spec of this kind names, for errors and help."""
    generator_form: str
    """What a generator spec of this kind names."""
    server: bool
    """Whether its specs name a server (`@URL`, else the role's default server)."""
    bare: bool
    """Whether the spec is the kind's name alone."""
    rank: int
    """Its place in the lists of forms."""
    scorer: Callable[[ModelSpec, ModelOptions], Scorer]
    """Builds the scorer of a parsed spec."""
    generator: Callable[[ModelSpec, ModelOptions], Generator]
    """Builds the generator of a parsed spec."""


_BACKENDS: dict[str, Backend] = {}


def register_backend(kind: str, *, form: str, usage: str | None = None, generator_form: str | None = None,
                     server: bool = False, bare: bool = False, rank: int = 100):
    """Class decorator: the class's `scorer(parsed, options)` and `generator(parsed, options)` build the models of
    the specs of `kind`. A module of crossknow.models.backends registers its kinds on import."""

    def register(backend_class):
        if kind in _BACKENDS:
            raise ValueError(f"two backends register the spec kind {kind!r}")
        _BACKENDS[kind] = Backend(kind, usage or kind, form, generator_form or form, server, bare, rank,
                                  backend_class.scorer, backend_class.generator)
        return backend_class

    return register


def registered_backends() -> dict[str, Backend]:
    """The backends registered so far, by kind (models/registry.py's `backends()` imports them all first)."""
    return dict(_BACKENDS)


def unregister_backend(kind: str) -> None:
    """Forget the backend of `kind` (a test's toy backend)."""
    del _BACKENDS[kind]


FORMAT_SEPARATOR = "#"
"""What separates a generator spec from its prompt format suffix."""


def split_prompt_format(spec: str) -> tuple[str, str]:
    """(the spec without its format suffix, the format: 'chat', 'completion', or 'auto' without one)."""
    base, separator, form = spec.rpartition(FORMAT_SEPARATOR)
    if not separator:
        return spec, "auto"
    if form not in ("chat", "completion"):
        raise ModelSpecError(f"{spec!r}: a spec's format suffix is #chat or #completion, not #{form}")
    return base, form


SERVER_SCHEMES = ("http://", "https://")
"""How the URL of an `openai:MODEL@URL` spec starts; an `@` followed by anything else is part of the model name."""


@dataclass(frozen=True)
class ModelSpec:
    """A model spec as `parse_spec` read it."""

    backend: str
    """default, hf, gguf, llamacpp or openai."""
    model: str
    """The spec without its server and format suffix: 'default', 'hf:ID@REVISION', 'gguf:FILE', 'llamacpp:FILE',
    'openai:MODEL'."""
    base_url: str | None
    """The server of an openai: spec (its own @URL, else the role's default); None for a local model."""
    prompt_format: str
    """'chat' or 'completion' from a #suffix, 'auto' without one."""

    @property
    def bare(self) -> str:
        """The spec a backend is built from, its server left to the options: model and format suffix."""
        suffix = "" if self.prompt_format == "auto" else FORMAT_SEPARATOR + self.prompt_format
        return self.model + suffix

    @property
    def written(self) -> str:
        """The spec written out with its server: 'openai:MODEL@URL[#format]' (a local spec: `bare`)."""
        if self.base_url is None:
            return self.bare
        suffix = "" if self.prompt_format == "auto" else FORMAT_SEPARATOR + self.prompt_format
        return f"{self.model}@{self.base_url}{suffix}"


@dataclass(frozen=True)
class LocalModel:
    """Where a local model spec's weights are."""

    path: str
    """A transformers model directory or hub id."""
    revision: str | None
    """Hub revision, for hf:ID@REVISION."""
    name: str
    """Backend name: default, hf or gguf."""
    model_id: str | None
    """Resolved identity; None lets the backend derive it from path and revision."""


def resolve_local(spec: str) -> LocalModel | None:
    """The transformers weights of a `default`, `hf:PATH[@REV]` or `gguf:FILE` spec, format suffix or not (a GGUF
    file is dequantised once into a cached checkpoint, a directory holding a PEFT adapter merged once into its
    base), and of a `llamacpp:` spec, which scores as the same GGUF
    dequantised (`llamacpp:default` as `default`); None for any other spec."""
    spec = split_prompt_format(spec)[0]
    kind, _, rest = spec.partition(":")
    if kind == "llamacpp" and rest:
        spec, kind = ("default", "default") if rest == "default" else (f"gguf:{rest}", "gguf")
    if spec == "default":
        from crossknow.models.checkpoint_cache import EMBEDDED_MODEL_ID, embedded_checkpoint

        return LocalModel(str(embedded_checkpoint()), None, "default", EMBEDDED_MODEL_ID)
    if kind == "hf" and rest:
        path, _, revision = rest.partition("@")
        if Path(path).is_dir() and not (Path(path) / "config.json").exists():
            from crossknow.models.checkpoint_cache import ADAPTER_CONFIG, adapter_checkpoint

            if not (Path(path) / ADAPTER_CONFIG).exists():
                raise CrossknowError(f"{path} is a directory without config.json (nor a PEFT adapter's "
                                     f"{ADAPTER_CONFIG}): not a transformers model")
            merged, model_id = adapter_checkpoint(Path(path))
            return LocalModel(str(merged), None, "hf", model_id)
        return LocalModel(path, revision or None, "hf", None)
    if kind == "gguf" and rest:
        from crossknow.models.checkpoint_cache import gguf_checkpoint
        path, model_id = gguf_file("gguf", rest)
        return LocalModel(str(gguf_checkpoint(path)), None, "gguf", model_id)
    return None


def weights_hash(spec: str) -> str:
    """Identity of the weights a model spec loads: the weight files' hashes for a local directory
    (the `default` model's cached checkpoint included), else the spec itself (a hub revision, a server
    model: their weights are not on this machine)."""
    from crossknow.models.weights import directory_weights_hash

    kind, _, rest = spec.partition(":")
    if kind == "openai":
        return spec
    local = resolve_local(spec)
    if local is not None and local.revision is None and Path(local.path).is_dir():
        return directory_weights_hash(local.path)
    return spec


GeneratorBackend = Literal["auto", "llamacpp", "transformers"]
"""The engine that generates with a GGUF model (`default`, `gguf:FILE`)."""


@dataclass(frozen=True)
class ModelOptions:
    """How a backend reaches and runs a model, whether it scores or generates: one record for every backend and
    role (each backend reads the fields it can use; a pool fills in the server and key of each spec)."""

    device: str = "auto"
    """'auto' (CUDA when present), 'cpu', 'cuda', 'cuda:1', ..."""
    dtype: str = "float32"
    """Compute dtype of local models ('auto': the checkpoint's own); scores are always float32."""
    trust_remote_code: bool = False
    """Run the modelling code a local checkpoint ships (transformers' `trust_remote_code`)."""
    attn_implementation: str | None = None
    """transformers' attention kernel of a local model ('eager', 'sdpa', ...); None: transformers' choice."""
    quantization: str | None = None
    """bitsandbytes' weights of a local transformers model, '8bit' or '4bit' (crossknow.models.hf_loading); None:
    the weights in `dtype`."""
    device_map: str | None = None
    """accelerate's placement of a local transformers model over the devices (crossknow.models.placement); None:
    the whole model on `device`."""
    max_memory: str | None = None
    """The most each device may hold under `device_map` ('0=70GiB,cpu=200GiB'); None: what each has."""
    generator_backend: GeneratorBackend = "auto"
    """Which engine generates with a GGUF model (see crossknow.models.backends.local)."""
    batch_size: int = 8
    """Items (contexts) per forward pass of local scorers."""
    base_url: str | None = None
    """Server of an openai: spec that names none (openai:MODEL@URL wins), e.g. http://127.0.0.1:8000/v1."""
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable holding the API key (never the key itself)."""
    concurrency: int = 8
    """Requests in flight at once for server backends."""
    timeout_s: float = 120.0
    """Seconds before one server request times out (and is retried)."""
    max_retries: int = 5
    """Retries of one server request after 429, 5xx, timeouts and dropped connections."""
    json_mode: str = "auto"
    """How server generators ask for JSON: 'auto', 'json_schema', 'json_object' or 'none'
    (see crossknow.models.openai_generator)."""
    fold_system: bool | Literal["auto"] = "auto"
    """Join system messages into the first user message, for servers whose chat template drops
    them (llama-cpp-python with --chat_format gemma): True, False, or "auto": only on a
    llama-cpp-python server, asked once (see crossknow.models.openai_generator)."""

    def transformers_only(self) -> str | None:
        """The first setting given here that only transformers' loading honours (bitsandbytes' weights, accelerate's
        placement), as its flag and value ('--quantization 4bit'); None without one."""
        if self.quantization:
            return f"--quantization {self.quantization}"
        return f"--device-map {self.device_map}" if self.device_map else None


def gguf_file(backend: str, file: str) -> tuple[Path, str]:
    """The GGUF file a `gguf:` or `llamacpp:` spec names, and its model id (the file's name and the start of its
    SHA-256); an error naming the file, and the spec's backend, when it does not exist."""
    from crossknow.store.hashing import file_sha256

    path = Path(file)
    if not path.is_file():
        raise CrossknowError(f"{backend}: file not found: {path}")
    return path, f"{path.name} (sha256 {file_sha256(path)[:16]})"
