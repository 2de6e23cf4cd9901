"""vLLM in this process (`vllm:PATH_OR_ID[@REVISION]`): scoring from prompt log-probabilities, and generation.

One `vllm.LLM` per model and settings serves a process's scorer and generator (vLLM takes most of the GPU's memory
for itself). Scoring sends the token ids that crossknow's own encoder gives (`crossknow.models.request_ids`: the same
boundary rules and refusals as the transformers scorer) with `prompt_logprobs=0`, which returns each prompt token's
log-probability and rank (vLLM: log-softmax of the raw logits, in float32); a continuation is greedy when every token
has rank 1. Prefix caching is off: vLLM's prompt log-probabilities have depended on request order with it on
(vllm-project/vllm#42019). Generation renders prompts as the transformers generator does (`chat_format.request_ids`)
and sends their ids, so that both backends ask a model the same thing.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from crossknow.errors import CrossknowError, MissingDependencyError, UnscorableRequest
from crossknow.models.chat_format import request_ids, resolve_prompt_format
from crossknow.models.generator import GenerateRequest, GenerateResult, PromptFormat, TokenAlternatives, Usage
from crossknow.models.protocol import ScoreRequest, ScoreResult
from crossknow.models.request_ids import RequestIds

DTYPES = ("float32", "bfloat16", "float16", "auto")
"""The dtypes vLLM takes here ('auto': the checkpoint's own; vLLM would load a float32 checkpoint as float16)."""


def _vllm() -> Any:
    try:
        import vllm
    except ImportError as error:
        raise MissingDependencyError("vllm", "vllm", "The in-process vLLM backend (vllm:)") from error
    return vllm


@functools.cache
def engine(path: str, revision: str | None, dtype: str, trust_remote_code: bool) -> Any:
    """The process's `vllm.LLM` for these settings, built on first use."""
    if dtype not in DTYPES:
        raise CrossknowError(f"vllm: dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    vllm = _vllm()
    return vllm.LLM(model=path, revision=revision, dtype=dtype, trust_remote_code=trust_remote_code, seed=0,
                    enable_prefix_caching=False)


class VLLMScorer:
    """Scores continuations with vLLM's prompt log-probabilities, on crossknow's token ids."""

    name = "vllm"

    def __init__(self, path: str, *, model_id: str | None = None, revision: str | None = None,
                 dtype: str = "float32", trust_remote_code: bool = False, llm: Any = None):
        self.model_id = model_id or (f"{path}@{revision}" if revision else path)
        self.dtype = dtype
        self.llm = llm or engine(path, revision, dtype, trust_remote_code)
        self.tokenizer = self.llm.get_tokenizer()
        config = self.llm.llm_engine.model_config
        # vLLM generates at least one token after a prompt, so a prompt may hold one position less than the model.
        self._ids = RequestIds(self.tokenizer, config.get_vocab_size(), config.max_model_len - 1)

    def encode_request(self, request: ScoreRequest) -> tuple[list[int], list[int]]:
        """Token ids (context, continuation) of `request` (crossknow.models.request_ids)."""
        return self._ids.encode_request(request)

    def score(self, requests: Sequence[ScoreRequest], keep_token_logprobs: bool = False) -> list[ScoreResult]:
        """Score every request; results are in request order."""
        encoded = []
        for index, request in enumerate(requests):
            try:
                encoded.append(self.encode_request(request))
            except UnscorableRequest as error:
                raise UnscorableRequest(str(error), index) from error
        if not encoded:
            return []
        params = _vllm().SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0, detokenize=False)
        outputs = self.llm.generate([{"prompt_token_ids": ctx + cont} for ctx, cont in encoded], params,
                                    use_tqdm=False)
        return [self._result(index, ctx, cont, output.prompt_logprobs, keep_token_logprobs)
                for index, ((ctx, cont), output) in enumerate(zip(encoded, outputs, strict=True))]

    def _result(self, index: int, ctx: list[int], cont: list[int], prompt_logprobs: list[Any],
                keep: bool) -> ScoreResult:
        """The ScoreResult of one request from vLLM's per-position entries (None first, then token id -> Logprob)."""
        values, greedy = [], True
        for token, entry in zip(cont, prompt_logprobs[len(ctx):], strict=True):
            chosen = entry[token]
            if not math.isfinite(chosen.logprob):
                raise UnscorableRequest(f"vllm: the log-probability of token {token} is {chosen.logprob}", index)
            values.append(float(chosen.logprob))
            greedy = greedy and chosen.rank == 1
        return ScoreResult(logprob_sum=float(sum(values)), n_tokens=len(values), greedy=greedy,
                           token_logprobs=tuple(values) if keep else None)


class VLLMGenerator:
    """Generates with vLLM in this process: chat and completion prompts, greedy or seeded, JSON schemas."""

    name = "vllm"

    def __init__(self, path: str, *, model_id: str | None = None, revision: str | None = None,
                 dtype: str = "float32", trust_remote_code: bool = False, prompt_format: str = "auto",
                 llm: Any = None):
        self.model_id = model_id or (f"{path}@{revision}" if revision else path)
        self.llm = llm or engine(path, revision, dtype, trust_remote_code)
        self.tokenizer = self.llm.get_tokenizer()
        self.prompt_format: PromptFormat = resolve_prompt_format(prompt_format, self.tokenizer)

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        """Answer every request in one call of the engine, which batches them; results are in request order."""
        if not requests:
            return []
        prompts = [{"prompt_token_ids": request_ids(self.tokenizer, request)} for request in requests]
        params = [self._sampling(request) for request in requests]
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        return [self._result(request, output) for request, output in zip(requests, outputs, strict=True)]

    def _sampling(self, request: GenerateRequest) -> Any:
        vllm = _vllm()
        settings: dict[str, Any] = {"max_tokens": request.max_tokens, "temperature": request.temperature,
                                    "seed": request.seed, "stop": list(request.stop) or None,
                                    "logprobs": request.top_logprobs or None}
        if request.json_schema is not None:
            settings |= _json_constraint(vllm, request.json_schema)
        return vllm.SamplingParams(**settings)

    def _result(self, request: GenerateRequest, output: Any) -> GenerateResult:
        completion = output.outputs[0]
        alternatives = None
        if request.top_logprobs and completion.logprobs:
            alternatives = tuple(_alternatives(token, entry)
                                 for token, entry in zip(completion.token_ids, completion.logprobs, strict=True))
        return GenerateResult(
            text=completion.text, backend=self.name, model_id=self.model_id,
            usage=Usage(prompt_tokens=len(output.prompt_token_ids), completion_tokens=len(completion.token_ids)),
            logprobs=alternatives, finish_reason=completion.finish_reason,
        )


def _json_constraint(vllm: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """SamplingParams' JSON-schema constraint: `structured_outputs` since vLLM 0.11 or so, `guided_decoding` before."""
    params = vllm.sampling_params
    if hasattr(params, "StructuredOutputsParams"):
        return {"structured_outputs": params.StructuredOutputsParams(json=schema)}
    return {"guided_decoding": params.GuidedDecodingParams(json=schema)}


def _alternatives(token: int, entry: dict[int, Any]) -> TokenAlternatives:
    """One generated token and its alternatives (vLLM: token id -> Logprob, the chosen token among them), most likely
    first."""
    top = sorted(((str(logprob.decoded_token), float(logprob.logprob)) for logprob in entry.values()),
                 key=lambda pair: pair[1], reverse=True)
    chosen = entry[token]
    return TokenAlternatives(token=str(chosen.decoded_token), logprob=float(chosen.logprob), top=tuple(top))
