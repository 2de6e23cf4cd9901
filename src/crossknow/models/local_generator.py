"""What the local generators share (transformers in `hf_generator`, llama.cpp in `llamacpp_generator`): requests
turned into decoding rows, batches sorted by prompt length, rows turned into results.

Greedy at temperature 0, else pure temperature sampling from a `torch.Generator` seeded with the request's seed
(the same text every time; the global RNG left alone). A subclass gives the model's side: `request_ids`, `decode`,
`detokenize`, `max_positions`, `stop_ids`, `json_constraints`, `prompt_text` and `scorer`: answers are scored
(`score_answers`, the yes/no confidence) exactly, by the engine's transformers scorer of the same model.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from crossknow.errors import CrossknowError
from crossknow.models.generator import (
    AnswerContinuation,
    ChatMessage,
    GenerateRequest,
    GenerateResult,
    PromptFormat,
    TokenAlternatives,
    Usage,
)
from crossknow.models.hf_decoding import DecodeRow, Step
from crossknow.models.json_constraint import JsonConstraintFactory
from crossknow.models.protocol import Scorer, ScoreRequest


class LocalGenerator:
    """The request-to-result path of a generator that decodes on this machine; see the module docstring."""

    name: str
    """Backend name as registered."""
    model_id: str
    """Resolved model identity."""
    prompt_format: PromptFormat
    """'chat' or 'completion' (see crossknow.models.generator)."""
    batch_size: int
    """Requests decoded together."""
    stop_ids: frozenset[int]
    """Token ids that end generation: EOS and `<end_of_turn>`."""
    constrain_json: bool
    """Whether requests with a JSON schema are decoded under its grammar (needs llguidance)."""
    sampler_device: str = "cpu"
    """Where a sampled row's `torch.Generator` lives (the device of the logits it samples from)."""

    def request_ids(self, request: GenerateRequest) -> list[int]:
        """Token ids of a request's prompt (chat or completion), after BOS, ending where the model's answer starts."""
        raise NotImplementedError

    def decode(self, rows: list[DecodeRow]) -> None:
        """Decode every row of `rows` (longest prompt first), at most `batch_size` at once, filling each row's
        output in place."""
        raise NotImplementedError

    def detokenize(self, ids: list[int]) -> str:
        """The text of generated token ids."""
        raise NotImplementedError

    def max_positions(self) -> int | None:
        """The most tokens a prompt and its output may hold together; None for no limit known."""
        raise NotImplementedError

    def json_constraints(self) -> JsonConstraintFactory:
        """The factory of JSON grammar constraints over this model's vocabulary, built on first need."""
        raise NotImplementedError

    def prompt_text(self, messages: Sequence[ChatMessage]) -> str:
        """A chat prompt as text, ending where the model's answer starts, without BOS."""
        raise NotImplementedError

    def scorer(self) -> Scorer:
        """The transformers Scorer of this model (built once)."""
        raise NotImplementedError

    def score_answers(self, requests: Sequence[AnswerContinuation]) -> list[float]:
        """Summed log-probability of each continuation after its prompt and answer prefix, exactly, through
        `scorer()` (the scoring rules of crossknow.models.boundary)."""
        scored = self.scorer().score([ScoreRequest(self._answer_context(r), r.continuation) for r in requests])
        return [result.logprob_sum for result in scored]

    def _answer_context(self, request: AnswerContinuation) -> str:
        """The text before a continuation: the prompt (chat markup for messages, as it is for a completion
        prompt) and the answer's prefix."""
        prompt = request.prompt if request.prompt is not None else self.prompt_text(request.messages)
        return prompt + request.answer_prefix

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        """Answer every request, `batch_size` at a time; results are in request order."""
        prompts = [self.request_ids(r) for r in requests]
        limit = self.max_positions()
        for ids in prompts:  # check all before spending time on any
            if limit and len(ids) >= limit:
                raise CrossknowError(f"{self.name}: a prompt of {len(ids)} tokens leaves no room in the model's "
                                     f"{limit} positions")
        rows = [self._row(ids, r, limit) for ids, r in zip(prompts, requests, strict=True)]
        order = sorted(range(len(rows)), key=lambda i: len(prompts[i]), reverse=True)
        self.decode([rows[i] for i in order])
        return [self._result(row, r) for row, r in zip(rows, requests, strict=True)]

    def _row(self, prompt: list[int], request: GenerateRequest, limit: int | None) -> DecodeRow:
        budget = request.max_tokens if not limit else min(request.max_tokens, limit - len(prompt))
        sampler = None
        if request.temperature > 0:
            sampler = torch.Generator(device=self.sampler_device)
            if request.seed is None:
                sampler.seed()
            else:
                sampler.manual_seed(request.seed)
        constraint = None
        if request.json_schema is not None and self.constrain_json:
            constraint = self.json_constraints()(request.json_schema)
        return DecodeRow(
            prompt=prompt, budget=budget, temperature=request.temperature, sampler=sampler,
            top_logprobs=request.top_logprobs, stop_strings=request.stop, constraint=constraint,
        )

    def _result(self, row: DecodeRow, request: GenerateRequest) -> GenerateResult:
        text = self.detokenize(row.generated)
        if row.text_end is not None:
            text = text[: row.text_end]
        return GenerateResult(
            text=text,
            backend=self.name,
            model_id=self.model_id,
            usage=Usage(prompt_tokens=len(row.prompt), completion_tokens=len(row.generated)),
            logprobs=self._alternatives(row.generated, row.steps) if request.top_logprobs > 0 else None,
            finish_reason=row.finish,
        )

    def _alternatives(self, generated: list[int], steps: list[Step]) -> tuple[TokenAlternatives, ...]:
        """Per generated token: its text (the pieces join to the decoded output) and the top alternatives."""
        result = []
        before = ""
        for i, (logprob, ids, values) in enumerate(steps):
            upto = self.detokenize(generated[: i + 1])
            piece = upto[len(before) :] if upto.startswith(before) else self.detokenize([generated[i]])
            before = upto
            top = tuple((self.detokenize([t]), v) for t, v in zip(ids, values, strict=True))
            result.append(TokenAlternatives(token=piece, logprob=logprob, top=top))
        return tuple(result)
