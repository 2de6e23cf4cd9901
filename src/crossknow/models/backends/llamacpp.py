"""GGUF files decoded by llama.cpp in this process (`llamacpp:FILE`, `llamacpp:default`); their scores go through
transformers on the same file dequantised, where crossknow's exact scoring rules hold."""

from __future__ import annotations

from crossknow.models.backends.local import local_scorer
from crossknow.models.generator import Generator
from crossknow.models.specs import ModelOptions, ModelSpec, gguf_file, register_backend


def llamacpp_generator(parsed: ModelSpec, options: ModelOptions) -> Generator:
    """The llama.cpp generator of a `llamacpp:FILE` spec (`default`: the embedded model's GGUF file)."""
    from crossknow.models.llamacpp_generator import LlamaCppGenerator, llamacpp_version

    file = parsed.model.partition(":")[2]
    if file == "default":
        from crossknow.models.checkpoint_cache import EMBEDDED_GGUF_ID, embedded_gguf

        path, model_id = embedded_gguf(), EMBEDDED_GGUF_ID
    else:
        path, model_id = gguf_file("llamacpp", file)
    return LlamaCppGenerator(path, model_id=f"{model_id}, llama.cpp {llamacpp_version()}",
                             prompt_format=parsed.prompt_format)


@register_backend("llamacpp", rank=3, usage="llamacpp:FILE|default",
                  form="as gguf:FILE (or default) here: scores go through transformers",
                  generator_form="a GGUF file (default: the embedded model's) decoded by llama.cpp in this process")
class LlamaCpp:
    """`llamacpp:FILE|default`: generation by llama.cpp, scoring by transformers on the dequantised file."""

    scorer = staticmethod(local_scorer)
    generator = staticmethod(llamacpp_generator)
