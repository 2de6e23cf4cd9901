"""Generator for transformers causal LMs (the `default`, `hf:` and `gguf:` specs).

Prompts: the tokenizer's chat template when it has one; otherwise Gemma's turn format
(`<start_of_turn>user\\n...<end_of_turn>\\n<start_of_turn>model\\n`, after BOS), with system text
opening the first user turn as Gemma's own template does. The embedded GGUF has no template, so the
`default` model takes the second path.

Decoding is a plain loop with the KV cache, one request at a time: greedy at temperature 0, else
pure temperature sampling (no top-k or top-p) from a `torch.Generator` seeded with the request's
seed, so that a seeded request gives the same text every time and the global RNG is left alone.
It stops at EOS, `<end_of_turn>` or `max_tokens`. Top log-probabilities are the log-softmax of the
model's own logits (before temperature), in float32: what a direct forward pass over prompt and
output gives. JSON schemas are not enforced here: `crossknow.generation` validates and retries.
"""

from __future__ import annotations

from collections.abc import Sequence

from crossknow.errors import CrossknowError, MissingDependencyError
from crossknow.models.generator import ChatMessage, GenerateRequest, GenerateResult, TokenAlternatives, Usage

try:
    import torch

    from crossknow.models.hf_loading import load_causal_lm, resolve_device
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
    """Completes chat prompts with a transformers causal LM; see the module docstring."""

    def __init__(
        self,
        path: str,
        *,
        name: str = "hf",
        model_id: str | None = None,
        revision: str | None = None,
        device: str = "auto",
        dtype: str = "float32",
    ):
        self.name = name
        self.model_id = model_id or (f"{path}@{revision}" if revision else path)
        self.dtype = dtype
        self.device = resolve_device(device)
        self.tokenizer, self.model = load_causal_lm(path, revision, self.model_id, self.device, dtype)
        self._max_positions = getattr(self.model.config, "max_position_embeddings", None)
        self.stop_ids = self._stop_ids()
        """Token ids that end generation: EOS (the tokenizer's and the model's) and `<end_of_turn>`."""

    def _stop_ids(self) -> frozenset[int]:
        ids: set[int] = set()
        for value in (self.tokenizer.eos_token_id, getattr(self.model.generation_config, "eos_token_id", None)):
            ids.update(value if isinstance(value, list) else [value] if value is not None else [])
        end_of_turn = self.tokenizer.convert_tokens_to_ids("<end_of_turn>")
        if isinstance(end_of_turn, int) and end_of_turn != self.tokenizer.unk_token_id:
            ids.add(end_of_turn)
        return frozenset(ids)

    def prompt_ids(self, messages: Sequence[ChatMessage]) -> list[int]:
        """Token ids of the prompt, ending where the model's answer starts."""
        if getattr(self.tokenizer, "chat_template", None):
            chat = [{"role": m.role, "content": m.content} for m in messages]
            text = self.tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
            return self.tokenizer(text, add_special_tokens=False).input_ids
        return self.tokenizer(gemma_prompt(messages)).input_ids

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        """Answer every request, one at a time; results are in request order."""
        prompts = [self.prompt_ids(r.messages) for r in requests]
        for ids in prompts:  # check all before spending time on any
            if self._max_positions and len(ids) >= self._max_positions:
                raise CrossknowError(
                    f"hf: a prompt of {len(ids)} tokens leaves no room in the model's {self._max_positions} positions"
                )
        return [self._generate_one(ids, r) for ids, r in zip(prompts, requests, strict=True)]

    def _generate_one(self, prompt: list[int], request: GenerateRequest) -> GenerateResult:
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
        generated: list[int] = []
        steps: list[tuple[float, list[int], list[float]]] = []  # chosen logprob, top ids, top logprobs
        finish = "length"
        with torch.inference_mode():
            inputs = torch.tensor([prompt], device=self.device)
            past = None
            for _ in range(budget):
                out = self.model(input_ids=inputs, past_key_values=past, use_cache=True, logits_to_keep=1)
                past = out.past_key_values
                logits = out.logits[0, -1].float()
                if sampler is None:
                    token = int(torch.argmax(logits))
                else:
                    probs = torch.softmax(logits / request.temperature, dim=-1)
                    token = int(torch.multinomial(probs, 1, generator=sampler))
                if token in self.stop_ids:
                    finish = "stop"
                    break
                if request.top_logprobs > 0:
                    logprobs = torch.log_softmax(logits, dim=-1)
                    top = torch.topk(logprobs, request.top_logprobs)
                    steps.append((float(logprobs[token]), top.indices.tolist(), top.values.tolist()))
                generated.append(token)
                inputs = torch.tensor([[token]], device=self.device)
        text = self.tokenizer.decode(generated)
        return GenerateResult(
            text=text,
            backend=self.name,
            model_id=self.model_id,
            usage=Usage(prompt_tokens=len(prompt), completion_tokens=len(generated)),
            logprobs=self._alternatives(generated, steps) if request.top_logprobs > 0 else None,
            finish_reason=finish,
        )

    def _alternatives(
        self, generated: list[int], steps: list[tuple[float, list[int], list[float]]]
    ) -> tuple[TokenAlternatives, ...]:
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
