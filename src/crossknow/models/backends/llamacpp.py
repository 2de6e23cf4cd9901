"""GGUF files decoded by llama.cpp in this process whatever the role's `generator_backend` (`llamacpp:FILE`,
`llamacpp:default`); their scores go through transformers on the same file dequantised, where crossknow's exact
scoring rules hold."""

from __future__ import annotations

from crossknow.models.backends.local import llamacpp_generator, local_scorer
from crossknow.models.specs import register_backend


@register_backend("llamacpp", rank=3, usage="llamacpp:FILE|default",
                  form="as gguf:FILE (or default) here: scores go through transformers",
                  generator_form="a GGUF file (default: the embedded model's) decoded by llama.cpp in this process")
class LlamaCpp:
    """`llamacpp:FILE|default`: generation by llama.cpp, scoring by transformers on the dequantised file."""

    scorer = staticmethod(local_scorer)
    generator = staticmethod(llamacpp_generator)
