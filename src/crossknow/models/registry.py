"""Model spec strings -> Scorer and Generator backends. Each backend is a module of crossknow.models.backends that
registers its spec kinds with `register_backend`; its heavy imports wait until it is chosen, so that a missing
optional dependency fails only then.

`parse_spec` is the one reader of a spec: `openai:MODEL@URL` names a server (else the role's flag gives it; `hf:ID@REV`
keeps its `@` as a revision), and a generator spec's `#chat` or `#completion` suffix sets the form its model is
asked in (else local models by their chat template, servers chat). Scorer specs take no suffix.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import Literal

from crossknow.errors import CrossknowError, ModelSpecError
from crossknow.models.generator import Generator
from crossknow.models.protocol import Scorer
from crossknow.models.specs import (
    FORMAT_SEPARATOR,
    SERVER_SCHEMES,
    Backend,
    ModelOptions,
    ModelSpec,
    registered_backends,
    split_prompt_format,
)


@functools.cache
def _import_backend_modules() -> None:
    """Import every module of crossknow.models.backends once: each registers its kinds on import."""
    import crossknow.models.backends as package

    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{module.name}")


def backends() -> dict[str, Backend]:
    """Every registered backend by kind, in the order of the lists of forms."""
    _import_backend_modules()
    return dict(sorted(registered_backends().items(), key=lambda item: (item[1].rank, item[0])))


def spec_forms(form: Literal["model", "generator"] = "model") -> tuple[str, ...]:
    """The valid forms of a `form` spec, one line each, as errors and help show them."""
    lines = [f"{b.usage:24} {b.generator_form if form == 'generator' else b.form}" for b in backends().values()]
    if form == "generator":
        lines.append("any of these + #chat or #completion   "
                     "ask the model with chat messages or plain completion prompts")
    return tuple(lines)


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
    known = backends()
    if model in known and known[model].bare:
        return ModelSpec(model, model, None, prompt_format)
    kind, _, rest = model.partition(":")
    backend = known.get(kind)
    if backend is not None and backend.server:
        rest, own_server = _split_server(rest)
        model, base_url = f"{kind}:{rest}", own_server or base_url
    if backend is None or backend.bare or not rest:
        raise ModelSpecError(f"unknown {form} spec {spec!r}. Valid forms:\n  " + "\n  ".join(spec_forms(form)))
    if not backend.server:
        return ModelSpec(kind, model, None, prompt_format)
    if not base_url:
        scheme = " (its URL starts with http:// or https://)" if "@" in rest else ""
        raise CrossknowError(f"{spec!r} needs a server{scheme}: write it in the spec, {model}@URL (e.g. "
                             f"{model}@http://127.0.0.1:8000/v1), or pass {server_flag} URL")
    return ModelSpec(kind, model, base_url, prompt_format)


def check_spec(
    spec: str, base_url: str | None, form: Literal["model", "generator"] = "model", server_flag: str = "--base-url"
) -> str:
    """The backend of `spec` (default, hf, gguf, llamacpp or openai), after `parse_spec`'s checks."""
    return parse_spec(spec, base_url, form, server_flag).backend


def load_scorer(spec: str, options: ModelOptions = ModelOptions()) -> Scorer:
    """Build the Scorer that `spec` names (a server spec without @URL: on `options.base_url`)."""
    parsed = parse_spec(spec, options.base_url)
    return backends()[parsed.backend].scorer(parsed, options)


def load_generator(spec: str, options: ModelOptions = ModelOptions()) -> Generator:
    """Build the Generator that `spec` names, asked in the form its suffix names (or its backend decides); a server
    spec without @URL on `options.base_url`."""
    parsed = parse_spec(spec, options.base_url, "generator")
    return backends()[parsed.backend].generator(parsed, options)


