"""Generator for transformers causal LMs (the `default`, `hf:` and `gguf:` specs).

Prompts: a completion request's `prompt` is tokenised as it is, after BOS. Chat messages take the
tokenizer's chat template when it has one; otherwise Gemma's turn format
(`<start_of_turn>user\\n...<end_of_turn>\\n<start_of_turn>model\\n`, after BOS), with system text
opening the first user turn as Gemma's own template does.

`prompt_format` ("auto" by default) is 'chat' when the tokenizer has a chat template and 'completion'
when it has none: the embedded GGUF ships none, so the `default` model is asked as the base model it is.

Requests are decoded in batches of `batch_size` (sorted by prompt length, so that a batch carries
little padding) by `crossknow.models.hf_decoding`: left padding, one KV cache, a stop per row.
Greedy at temperature 0, else pure temperature sampling (no top-k or top-p) from a
`torch.Generator` seeded with the request's seed, so that a seeded request gives the same text
every time and the global RNG is left alone. A row stops at EOS, `<end_of_turn>`, one of its
`stop` strings or `max_tokens`. Top log-probabilities are the log-softmax of the model's own
logits (before temperature), in float32: what a direct forward pass over prompt and output gives.

A request with a `json_schema` is decoded under that schema's grammar (llguidance, see
`crossknow.models.json_constraint`) and ends at the closing brace, or early, with finish reason
'repetition', when the model loops inside a JSON string; without llguidance installed the output is
unconstrained and `crossknow.generation` validates and retries.

`score_answers` scores continuations of an answer exactly, through the engine's HFScorer (built
on first use around this generator's loaded model, not a second copy): the yes/no confidence of fact detection uses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from crossknow.errors import CrossknowError, MissingDependencyError
from crossknow.models.generator import (
    PROMPT_FORMATS,
    AnswerContinuation,
    ChatMessage,
    GenerateRequest,
    GenerateResult,
    PromptFormat,
    TokenAlternatives,
    Usage,
)
from crossknow.models.protocol import Scorer, ScoreRequest

try:
    import torch

    from crossknow.models.hf_decoding import DecodeRow, Step, decode_batch
    from crossknow.models.hf_loading import load_causal_lm, resolve_device
    from crossknow.models.json_constraint import JsonConstraintFactory, json_constraints_available
except ImportError as _error:  # pragma: no cover - exercised only without the hf extra
    raise MissingDependencyError("torch and transformers", "hf", "Local models (default, hf:, gguf:)") from _error


def gemma_prompt(messages: Sequence[ChatMessage]) -> str:
    """Gemma's turn format for `messages`, ending with the open model turn (no BOS: the tokenizer adds it)."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    text = ""
    for message in messages:
        if message.role == "system":
            continue
        content = message.content
        if system and message.role == "user":
            content, system = f"{system}\n\n{content}", ""
        role = "model" if message.role == "assistant" else "user"
        text += f"<start_of_turn>{role}\n{content}<end_of_turn>\n"
    if system:  # no user message to carry it
        text = f"<start_of_turn>user\n{system}<end_of_turn>\n" + text
    return text + "<start_of_turn>model\n"


class HFGenerator:
    """Completes chat and completion prompts with a transformers causal LM; see the module docstring."""

    def __init__(
        self,
        path: str,
        *,
        name: str = "hf",
        model_id: str | None = None,
        revision: str | None = None,
        device: str = "auto",
        dtype: str = "float32",
        batch_size: int = 8,
        constrain_json: bool = True,
        prompt_format: str = "auto",
    ):
        if batch_size < 1:
            raise CrossknowError(f"batch_size must be at least 1, got {batch_size}")
        self.name = name
        self.model_id = model_id or (f"{path}@{revision}" if revision else path)
        self.dtype = dtype
        self.device = resolve_device(device)
        self.batch_size = batch_size
        """Requests decoded together."""
        self._path, self._revision = path, revision
        self.tokenizer, self.model = load_causal_lm(path, revision, self.model_id, self.device, dtype)
        self.prompt_format: PromptFormat = resolve_prompt_format(prompt_format, self.tokenizer)
        """'chat' or 'completion' (see the module docstring)."""
        self._max_positions = getattr(self.model.config, "max_position_embeddings", None)
        self._pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        self.stop_ids = self._stop_ids()
        """Token ids that end generation: EOS (the tokenizer's and the model's) and `<end_of_turn>`."""
        self.constrain_json = constrain_json and json_constraints_available()
        """Whether requests with a JSON schema are decoded under its grammar (needs llguidance)."""
        self._json_constraints: JsonConstraintFactory | None = None
        self._scorer: Scorer | None = None

    def _stop_ids(self) -> frozenset[int]:
        ids: set[int] = set()
        for value in (self.tokenizer.eos_token_id, getattr(self.model.generation_config, "eos_token_id", None)):
            ids.update(value if isinstance(value, list) else [value] if value is not None else [])
        end_of_turn = self.tokenizer.convert_tokens_to_ids("<end_of_turn>")
        if isinstance(end_of_turn, int) and end_of_turn != self.tokenizer.unk_token_id:
            ids.add(end_of_turn)
        return frozenset(ids)

    def prompt_text(self, messages: Sequence[ChatMessage]) -> str:
        """The prompt as text, ending where the model's answer starts; the tokenizer adds BOS to it."""
        return chat_prompt_text(self.tokenizer, messages)

    def request_ids(self, request: GenerateRequest) -> list[int]:
        """Token ids of a request's prompt (chat or completion), ending where the model's answer starts."""
        if request.prompt is not None:
            return self.tokenizer(request.prompt).input_ids
        return self.prompt_ids(request.messages)

    def prompt_ids(self, messages: Sequence[ChatMessage]) -> list[int]:
        """Token ids of a chat prompt, ending where the model's answer starts."""
        if getattr(self.tokenizer, "chat_template", None):
            chat = [{"role": m.role, "content": m.content} for m in messages]
            text = self.tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
            return self.tokenizer(text, add_special_tokens=False).input_ids
        return self.tokenizer(gemma_prompt(messages)).input_ids

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        """Answer every request, `batch_size` at a time; results are in request order."""
        prompts = [self.request_ids(r) for r in requests]
        for ids in prompts:  # check all before spending time on any
            if self._max_positions and len(ids) >= self._max_positions:
                raise CrossknowError(
                    f"hf: a prompt of {len(ids)} tokens leaves no room in the model's {self._max_positions} positions"
                )
        rows = [self._row(ids, r) for ids, r in zip(prompts, requests, strict=True)]
        order = sorted(range(len(rows)), key=lambda i: len(prompts[i]), reverse=True)
        for start in range(0, len(order), self.batch_size):
            batch = [rows[i] for i in order[start : start + self.batch_size]]
            decode_batch(self.model, batch, self.stop_ids, self._pad_id, self.tokenizer.decode)
        return [self._result(row, r) for row, r in zip(rows, requests, strict=True)]

    def _row(self, prompt: list[int], request: GenerateRequest) -> DecodeRow:
        budget = request.max_tokens
        if self._max_positions:
            budget = min(budget, self._max_positions - len(prompt))
        sampler = None
        if request.temperature > 0:
            sampler = torch.Generator(device=self.device)
            if request.seed is None:
                sampler.seed()
            else:
                sampler.manual_seed(request.seed)
        constraint = None
        if request.json_schema is not None and self.constrain_json:
            if self._json_constraints is None:  # about 20 s once for a 262k vocabulary: only when needed
                vocab_size = self.model.get_output_embeddings().weight.shape[0]
                self._json_constraints = JsonConstraintFactory(self.tokenizer, vocab_size)
            constraint = self._json_constraints(request.json_schema)
        return DecodeRow(
            prompt=prompt, budget=budget, temperature=request.temperature, sampler=sampler,
            top_logprobs=request.top_logprobs, stop_strings=request.stop, constraint=constraint,
        )

    def _result(self, row: DecodeRow, request: GenerateRequest) -> GenerateResult:
        text = self.tokenizer.decode(row.generated)
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
            upto = self.tokenizer.decode(generated[: i + 1])
            piece = upto[len(before) :] if upto.startswith(before) else self.tokenizer.decode([generated[i]])
            before = upto
            top = tuple((self.tokenizer.decode([t]), v) for t, v in zip(ids, values, strict=True))
            result.append(TokenAlternatives(token=piece, logprob=logprob, top=top))
        return tuple(result)

    def scorer(self) -> Scorer:
        """An HFScorer sharing this generator's loaded model (built once; no second copy of the weights)."""
        if self._scorer is None:
            from crossknow.models.hf_scorer import HFScorer

            self._scorer = HFScorer(
                self._path, name=self.name, model_id=self.model_id, revision=self._revision,
                device=self.device, dtype=self.dtype, batch_size=self.batch_size, loaded=(self.tokenizer, self.model),
            )
        return self._scorer

    def score_answers(self, requests: Sequence[AnswerContinuation]) -> list[float]:
        """Summed log-probability of each continuation after its prompt and answer prefix, exactly,
        through `scorer()` (the scoring rules of crossknow.models.boundary)."""
        scored = self.scorer().score(
            [ScoreRequest(self._answer_context(r), r.continuation) for r in requests]
        )
        return [result.logprob_sum for result in scored]

    def _answer_context(self, request: AnswerContinuation) -> str:
        """The text before a continuation: the prompt (chat markup for messages, as it is for a completion
        prompt) and the answer's prefix."""
        prompt = request.prompt if request.prompt is not None else self.prompt_text(request.messages)
        return prompt + request.answer_prefix


def resolve_prompt_format(asked: str, tokenizer: Any) -> PromptFormat:
    """'chat' or 'completion' for a local model: `asked` unless it is "auto", which is 'chat' for a tokenizer
    with a chat template and 'completion' for one without (a base model)."""
    if asked not in PROMPT_FORMATS:
        raise CrossknowError(f"prompt format must be one of {', '.join(PROMPT_FORMATS)}; got {asked!r}")
    if asked != "auto":
        return asked  # type: ignore[return-value]
    return "chat" if getattr(tokenizer, "chat_template", None) else "completion"


def chat_prompt_text(tokenizer: Any, messages: Sequence[ChatMessage]) -> str:
    """`messages` as the text a local model continues, ending where its answer starts, without BOS (the
    tokenizer adds it): the tokenizer's chat template, or Gemma's turn format when it has none (the embedded
    GGUF ships no template)."""
    if getattr(tokenizer, "chat_template", None):
        chat = [{"role": m.role, "content": m.content} for m in messages]
        text = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
        bos = tokenizer.bos_token
        return text[len(bos) :] if bos and text.startswith(bos) else text
    return gemma_prompt(messages)
