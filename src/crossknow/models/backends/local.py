"""Local weights: the embedded model (`default`), a model directory or hub id (`hf:`) and a GGUF file (`gguf:`).
Scores come from crossknow's transformers scorer (a GGUF dequantised once into a cached checkpoint).

A GGUF model generates on llama.cpp, on its own quantised weights, where `generator_backend` is 'llamacpp', or 'auto'
with the model on the CPU and llama-cpp-python installed (crossknow's choice: the GGUF is the model as published, and
llama.cpp writes tokens several times faster than float32 transformers on the CPU; on a GPU transformers runs there,
and the lock builds llama.cpp for the CPU), unless --quantization asks for bitsandbytes' weights; else on transformers,
on the dequantised weights."""

from __future__ import annotations

import logging
import typing
from pathlib import Path
from typing import TYPE_CHECKING

from crossknow.errors import CrossknowError, MissingDependencyError
from crossknow.models import specs
from crossknow.models.generator import Generator
from crossknow.models.protocol import Scorer
from crossknow.models.specs import GeneratorBackend, ModelOptions, ModelSpec, gguf_file, register_backend

if TYPE_CHECKING:
    from crossknow.models.hf_loading import LoadSettings

log = logging.getLogger(__name__)


def load_settings(options: ModelOptions) -> LoadSettings:
    """How transformers loads the model, from the role's options."""
    from crossknow.models.hf_loading import LoadSettings

    return LoadSettings(trust_remote_code=options.trust_remote_code, attn_implementation=options.attn_implementation,
                        quantization=options.quantization, device_map=options.device_map,
                        max_memory=options.max_memory)


def local_scorer(parsed: ModelSpec, options: ModelOptions) -> Scorer:
    """The transformers scorer of a local spec, after the device is checked (before any conversion or load)."""
    from crossknow.models.device import resolve_device
    from crossknow.models.hf_scorer import HFScorer

    resolve_device(options.device)
    local = specs.resolve_local(parsed.model)
    assert local is not None  # parse_spec accepted a local spec
    return HFScorer(local.path, name=local.name, model_id=local.model_id, revision=local.revision,
                    device=options.device, dtype=options.dtype, batch_size=options.batch_size,
                    load=load_settings(options))


def gguf_of(parsed: ModelSpec) -> tuple[Path, str]:
    """The GGUF file a `default`, `gguf:FILE` or `llamacpp:FILE|default` spec names, and its model id."""
    kind, _, file = parsed.model.partition(":")
    if parsed.model == "default" or file == "default":
        from crossknow.models.checkpoint_cache import EMBEDDED_GGUF_ID, embedded_gguf

        return embedded_gguf(), EMBEDDED_GGUF_ID
    return gguf_file(kind, file)


def llamacpp_decodes(options: ModelOptions) -> bool:
    """Whether a GGUF model generates on llama.cpp under `options` (see the module docstring); 'auto' without
    llama-cpp-python says so in one line."""
    choice, known = options.generator_backend, typing.get_args(GeneratorBackend)
    if choice not in known:
        raise CrossknowError(f"generator backend must be one of {', '.join(known)}; got {choice!r}")
    only = options.transformers_only()
    if only and choice == "llamacpp":
        raise CrossknowError(f"{only} sets how transformers loads the weights; llama.cpp decodes the GGUF's own on "
                             f"the CPU (--generator-backend transformers, or no {only.split()[0]})")
    if choice != "auto":
        return choice == "llamacpp"
    if only:
        return False
    from crossknow.models.device import resolve_device

    if resolve_device(options.device) != "cpu":
        return False
    try:
        import crossknow.models.llamacpp_generator  # noqa: F401
    except MissingDependencyError:
        log.warning("llama-cpp-python is not installed: the GGUF model generates through transformers, several "
                    "times slower (pip install 'crossknow[llamacpp]' for llama.cpp)")
        return False
    return True


def llamacpp_generator(parsed: ModelSpec, options: ModelOptions) -> Generator:
    """The llama.cpp generator of a spec's GGUF file (`gguf_of`), named by the spec's backend; it scores answers
    (yes/no confidence) through the spec's transformers scorer, loaded when first asked."""
    from crossknow.models.llamacpp_generator import LlamaCppGenerator, llamacpp_version

    path, model_id = gguf_of(parsed)
    return LlamaCppGenerator(path, name=parsed.backend, model_id=f"{model_id}, llama.cpp {llamacpp_version()}",
                             prompt_format=parsed.prompt_format, scorer=lambda: local_scorer(parsed, options))


def local_generator(parsed: ModelSpec, options: ModelOptions) -> Generator:
    """The generator of a local spec: llama.cpp for a GGUF model where `llamacpp_decodes`, else transformers."""
    if parsed.backend in ("default", "gguf") and llamacpp_decodes(options):
        return llamacpp_generator(parsed, options)
    from crossknow.models.hf_generator import HFGenerator

    local = specs.resolve_local(parsed.model)
    assert local is not None  # parse_spec accepted a local spec
    return HFGenerator(local.path, name=local.name, model_id=local.model_id, revision=local.revision,
                       device=options.device, dtype=options.dtype, prompt_format=parsed.prompt_format,
                       load=load_settings(options))


@register_backend("gguf", rank=2, usage="gguf:FILE",
                  form="a GGUF file, dequantised into a cached transformers checkpoint",
                  generator_form="a GGUF file, decoded by llama.cpp (see --generator-backend)")
@register_backend("hf", rank=1, usage="hf:PATH_OR_ID[@REVISION]", form="a transformers model directory or hub id")
@register_backend("default", rank=0, bare=True, form="the embedded Gemma 3 270M (works offline)")
class LocalWeights:
    """`default`, `hf:PATH_OR_ID[@REVISION]` and `gguf:FILE`: see the module docstring."""

    scorer = staticmethod(local_scorer)
    generator = staticmethod(local_generator)
