"""Model spec strings -> Scorer and Generator backends, imported lazily so that a missing optional dependency fails
only when its backend is chosen.

`parse_spec` is the one reader of a spec: `openai:MODEL@URL` names a server (else the role's flag gives it; `hf:ID@REV`
keeps its `@` as a revision), and a generator spec's `#chat` or `#completion` suffix sets the form its model is
asked in (else local models by their chat template, servers chat). Scorer specs take no suffix.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from crossknow.errors import CrossknowError, ModelSpecError
from crossknow.models.generator import Generator
from crossknow.models.protocol import Scorer

SPEC_FORMS = (
    "default                  the embedded Gemma 3 270M (works offline)",
    "hf:PATH_OR_ID[@REVISION] a transformers model directory or hub id",
    "gguf:FILE                a GGUF file, dequantised into a cached transformers checkpoint",
    "llamacpp:FILE|default    as gguf:FILE (or default) here: scores go through transformers",
    "openai:MODEL[@URL]       an OpenAI-compatible server at URL (without @URL: the role's --base-url)",
)
"""The valid forms of a model spec, as shown in errors and help."""


@dataclass(frozen=True)
class ScorerOptions:
    """Settings that apply to the backends that can use them."""

    device: str = "auto"
    """'auto' (CUDA when present), 'cpu', 'cuda', 'cuda:1', ..."""
    dtype: str = "float32"
    """Compute dtype of local models; results are always float32."""
    batch_size: int = 8
    """Items (contexts) per forward pass for local models."""
    base_url: str | None = None
    """Server of an openai: spec that names none (openai:MODEL@URL wins), e.g. http://127.0.0.1:8000/v1."""
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable holding the API key (never the key itself)."""
    concurrency: int = 8
    """Requests in flight at once for server backends."""


GENERATOR_SPEC_FORMS = (
    "default                  the embedded Gemma 3 270M (works offline)",
    "hf:PATH_OR_ID[@REVISION] a transformers model directory or hub id",
    "gguf:FILE                a GGUF file, dequantised into a cached transformers checkpoint",
    "llamacpp:FILE|default    a GGUF file (default: the embedded model's) decoded by llama.cpp in this process",
    "openai:MODEL[@URL]       an OpenAI-compatible server's /v1/chat/completions (without @URL: --base-url)",
    "any of these + #chat or #completion   ask the model with chat messages or plain completion prompts",
)
"""The valid forms of a generator spec, as shown in errors and help."""

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


def _split_server(model: str) -> tuple[str, str | None]:
    """(model name, the URL after its first '@http://' or '@https://', or None)."""
    cuts = [model.find("@" + scheme) for scheme in SERVER_SCHEMES if "@" + scheme in model]
    if not cuts:
        return model, None
    cut = min(cuts)
    return model[:cut], model[cut + 1:]


def parse_spec(
    spec: str, base_url: str | None = None, form: Literal["model", "generator"] = "model",
    server_flag: str = "--base-url",
) -> ModelSpec:
    """Read `spec`, failing now, before any work or model load, on a spec no backend takes (the error lists
    the valid forms of a `form` spec: only a generator spec takes a format suffix) or an openai: spec without a
    server: neither its own `@URL` nor `base_url`, the default of its role, which the flag `server_flag` gives
    (the error says both ways)."""
    model, prompt_format = spec, "auto"
    if FORMAT_SEPARATOR in spec:
        if form != "generator":
            raise ModelSpecError(f"{spec!r}: only a generator spec takes a #chat or #completion suffix")
        model, prompt_format = split_prompt_format(spec)
    if model == "default":
        return ModelSpec("default", model, None, prompt_format)
    kind, _, rest = model.partition(":")
    if kind == "openai":
        rest, own_server = _split_server(rest)
        model, base_url = f"openai:{rest}", own_server or base_url
    if kind not in ("hf", "gguf", "llamacpp", "openai") or not rest:
        forms = GENERATOR_SPEC_FORMS if form == "generator" else SPEC_FORMS
        raise ModelSpecError(f"unknown {form} spec {spec!r}. Valid forms:\n  " + "\n  ".join(forms))
    if kind != "openai":
        return ModelSpec(kind, model, None, prompt_format)
    if not base_url:
        scheme = " (its URL starts with http:// or https://)" if "@" in rest else ""
        raise CrossknowError(f"{spec!r} needs a server{scheme}: write it in the spec, {model}@URL (e.g. "
                             f"{model}@http://127.0.0.1:8000/v1), or pass {server_flag} URL")
    return ModelSpec("openai", model, base_url, prompt_format)


def check_spec(
    spec: str, base_url: str | None, form: Literal["model", "generator"] = "model", server_flag: str = "--base-url"
) -> str:
    """The backend of `spec` (default, hf, gguf, llamacpp or openai), after `parse_spec`'s checks."""
    return parse_spec(spec, base_url, form, server_flag).backend


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
    file is dequantised once into a cached checkpoint), and of a `llamacpp:` spec, which scores as the same GGUF
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
            raise CrossknowError(f"{path} is a directory without config.json: not a transformers model")
        return LocalModel(path, revision or None, "hf", None)
    if kind == "gguf" and rest:
        from crossknow.models.checkpoint_cache import gguf_checkpoint
        gguf_file, model_id = _gguf_file("gguf", rest)
        return LocalModel(str(gguf_checkpoint(gguf_file)), None, "gguf", model_id)
    return None


def load_scorer(spec: str, options: ScorerOptions = ScorerOptions()) -> Scorer:
    """Build the Scorer that `spec` names (an openai: spec without @URL: on `options.base_url`)."""
    parsed = parse_spec(spec, options.base_url)
    if parsed.backend == "openai":
        from crossknow.models.openai_scorer import OpenAIScorer

        return OpenAIScorer(
            parsed.model.partition(":")[2], base_url=parsed.base_url, api_key_env=options.api_key_env,
            concurrency=options.concurrency,
        )
    from crossknow.models.device import resolve_device

    resolve_device(options.device)  # a device this machine lacks is refused before a model is converted or loaded
    local = resolve_local(parsed.model)
    assert local is not None  # check_spec accepted a local spec
    from crossknow.models.hf_scorer import HFScorer

    return HFScorer(
        local.path, name=local.name, model_id=local.model_id, revision=local.revision,
        device=options.device, dtype=options.dtype, batch_size=options.batch_size,
    )


@dataclass(frozen=True)
class GeneratorOptions:
    """Settings for generator backends; the fields shared with ScorerOptions mean the same."""

    device: str = "auto"
    """'auto' (CUDA when present), 'cpu', 'cuda', 'cuda:1', ..."""
    dtype: str = "float32"
    """Compute dtype of local models."""
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
    """How server backends ask for JSON: 'auto', 'json_schema', 'json_object' or 'none'
    (see crossknow.models.openai_generator)."""
    fold_system: bool | Literal["auto"] = "auto"
    """Join system messages into the first user message, for servers whose chat template drops
    them (llama-cpp-python with --chat_format gemma): True, False, or "auto": only on a
    llama-cpp-python server, asked once (see crossknow.models.openai_generator)."""


def load_generator(spec: str, options: GeneratorOptions = GeneratorOptions()) -> Generator:
    """Build the Generator that `spec` names, asked in the form its suffix names (or its backend decides); an
    openai: spec without @URL on `options.base_url`."""
    parsed = parse_spec(spec, options.base_url, "generator")
    prompt_format = parsed.prompt_format
    if parsed.backend == "openai":
        from crossknow.models.openai_generator import OpenAIGenerator

        return OpenAIGenerator(
            parsed.model.partition(":")[2], base_url=parsed.base_url, api_key_env=options.api_key_env,
            concurrency=options.concurrency, timeout_s=options.timeout_s, max_retries=options.max_retries,
            json_mode=options.json_mode, fold_system=options.fold_system,  # type: ignore[arg-type]
            prompt_format=prompt_format,
        )
    if parsed.backend == "llamacpp":
        return _llamacpp_generator(parsed.model.partition(":")[2], prompt_format)
    local = resolve_local(parsed.model)
    assert local is not None  # check_spec accepted a local spec
    from crossknow.models.hf_generator import HFGenerator

    return HFGenerator(
        local.path, name=local.name, model_id=local.model_id, revision=local.revision,
        device=options.device, dtype=options.dtype, prompt_format=prompt_format,
    )


def _llamacpp_generator(file: str, prompt_format: str) -> Generator:
    """The llama.cpp generator of a `llamacpp:FILE` spec (`default`: the embedded model's GGUF file)."""
    from crossknow.models.llamacpp_generator import LlamaCppGenerator, llamacpp_version

    if file == "default":
        from crossknow.models.checkpoint_cache import EMBEDDED_GGUF_ID, embedded_gguf

        path, model_id = embedded_gguf(), EMBEDDED_GGUF_ID
    else:
        path, model_id = _gguf_file("llamacpp", file)
    return LlamaCppGenerator(path, model_id=f"{model_id}, llama.cpp {llamacpp_version()}", prompt_format=prompt_format)


def _gguf_file(backend: str, file: str) -> tuple[Path, str]:
    """The GGUF file a `gguf:` or `llamacpp:` spec names, and its model id (the file's name and the start of its
    SHA-256); an error naming the file, and the spec's backend, when it does not exist."""
    from crossknow.store.hashing import file_sha256

    path = Path(file)
    if not path.is_file():
        raise CrossknowError(f"{backend}: file not found: {path}")
    return path, f"{path.name} (sha256 {file_sha256(path)[:16]})"
