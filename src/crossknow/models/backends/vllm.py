"""vLLM in this process (`vllm:PATH_OR_ID[@REVISION]`, CUDA only): scores from prompt log-probabilities and
generation (crossknow.models.vllm_engine); the weights are found as for `hf:`."""

from __future__ import annotations

from crossknow.errors import CrossknowError
from crossknow.models import specs
from crossknow.models.generator import Generator
from crossknow.models.protocol import Scorer
from crossknow.models.specs import LocalModel, ModelOptions, ModelSpec, register_backend


def _weights(parsed: ModelSpec, options: ModelOptions) -> LocalModel:
    """Where the weights of a `vllm:` spec are (as for `hf:`), after checking that the role runs on CUDA."""
    from crossknow.models.device import resolve_device

    only = options.transformers_only()
    if only:
        raise CrossknowError(f"{parsed.model}: {only} sets how transformers loads a model; vLLM reads a quantised "
                             "checkpoint and spreads a model over GPUs by its own settings (use hf: for this)")
    if not resolve_device(options.device).startswith("cuda"):
        raise CrossknowError(f"{parsed.model}: vLLM runs on CUDA, and this role's device is {options.device!r} "
                             "(no CUDA device here, or --device cpu); use hf: for the CPU")
    local = specs.resolve_local("hf:" + parsed.model.partition(":")[2])
    assert local is not None
    return local


def vllm_scorer(parsed: ModelSpec, options: ModelOptions) -> Scorer:
    from crossknow.models.vllm_engine import VLLMScorer

    local = _weights(parsed, options)
    return VLLMScorer(local.path, model_id=local.model_id, revision=local.revision, dtype=options.dtype,
                      trust_remote_code=options.trust_remote_code)


def vllm_generator(parsed: ModelSpec, options: ModelOptions) -> Generator:
    from crossknow.models.vllm_engine import VLLMGenerator

    local = _weights(parsed, options)
    return VLLMGenerator(local.path, model_id=local.model_id, revision=local.revision, dtype=options.dtype,
                         trust_remote_code=options.trust_remote_code, prompt_format=parsed.prompt_format)


@register_backend("vllm", rank=4, usage="vllm:PATH_OR_ID[@REVISION]",
                  form="a transformers model run by vLLM in this process (CUDA; crossknow[vllm])")
class VLLM:
    """`vllm:PATH_OR_ID[@REVISION]`: scoring and generation by vLLM in this process."""

    scorer = staticmethod(vllm_scorer)
    generator = staticmethod(vllm_generator)
