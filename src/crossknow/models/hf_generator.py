"""Generator for transformers causal LMs (the `default`, `hf:` and `gguf:` specs).

A completion prompt is tokenised as it is, after BOS; chat messages take the tokenizer's chat template, else Gemma's
turn format with system text opening the first user turn. `prompt_format` "auto" is 'chat' with a template and
'completion' without (the embedded GGUF has none). Decoding and `score_answers` are
`crossknow.models.local_generator`'s; its scorer is an HFScorer on this generator's loaded weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from crossknow.errors import CrossknowError, MissingDependencyError
from crossknow.models.chat_format import gemma_prompt, request_ids, resolve_prompt_format
from crossknow.models.generator import ChatMessage, GenerateRequest, PromptFormat
from crossknow.models.protocol import Scorer

try:
    from crossknow.models.device import resolve_device
    from crossknow.models.hf_decoding import DecodeRow, decode_batch
    from crossknow.models.hf_loading import CHECKPOINT_DTYPE, LoadSettings, dtype_name, load_causal_lm, scoring_view
    from crossknow.models.json_constraint import JsonConstraintFactory, json_constraints_available
    from crossknow.models.local_generator import LocalGenerator
    from crossknow.models.placement import input_device
except ImportError as _error:  # pragma: no cover - exercised only without the hf extra
    raise MissingDependencyError("torch and transformers", "hf", "Local models (default, hf:, gguf:)") from _error


class HFGenerator(LocalGenerator):
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
        load: LoadSettings = LoadSettings(),
    ):
        if batch_size < 1:
            raise CrossknowError(f"batch_size must be at least 1, got {batch_size}")
        self.name = name
        self.model_id = load.model_id(model_id or (f"{path}@{revision}" if revision else path))
        self.batch_size = batch_size
        self._path, self._revision, self._load = path, revision, load
        self.tokenizer, self.model = load_causal_lm(path, revision, self.model_id, resolve_device(device), dtype,
                                                    load)
        self.device = input_device(self.model)
        self.sampler_device = self.device
        self.dtype = dtype_name(self.model.dtype) if dtype == CHECKPOINT_DTYPE else dtype
        self.prompt_format: PromptFormat = resolve_prompt_format(prompt_format, self.tokenizer)
        """'chat' or 'completion' (see the module docstring)."""
        self._max_positions = getattr(self.model.config, "max_position_embeddings", None)
        self._pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        self.stop_ids = self._stop_ids()
        self.constrain_json = constrain_json and json_constraints_available()
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
        """Token ids of a request's prompt (crossknow.models.chat_format.request_ids)."""
        return request_ids(self.tokenizer, request)

    def decode(self, rows: list[DecodeRow]) -> None:
        """Decode `rows` in batches of `batch_size` (crossknow.models.hf_decoding)."""
        for start in range(0, len(rows), self.batch_size):
            decode_batch(self.model, rows[start : start + self.batch_size], self.stop_ids, self._pad_id,
                         self.tokenizer.decode)

    def detokenize(self, ids: list[int]) -> str:
        """The tokenizer's text of `ids`."""
        return self.tokenizer.decode(ids)

    def max_positions(self) -> int | None:
        """The model's `max_position_embeddings`."""
        return self._max_positions

    def json_constraints(self) -> JsonConstraintFactory:
        """Built on first need: about 20 s once for a 262k vocabulary."""
        if self._json_constraints is None:
            vocab_size = self.model.get_output_embeddings().weight.shape[0]
            self._json_constraints = JsonConstraintFactory.from_hf(self.tokenizer, vocab_size)
        return self._json_constraints

    def scorer(self) -> Scorer:
        """An HFScorer sharing this generator's loaded model (built once; no second copy of the weights), through
        the implementation a scorer of its own would load (`hf_loading.scoring_view`)."""
        if self._scorer is None:
            from crossknow.models.hf_scorer import HFScorer

            model = scoring_view(self.model, self.dtype, self._load)
            self._scorer = HFScorer(
                self._path, name=self.name, model_id=self.model_id, revision=self._revision,
                device=self.device, dtype=self.dtype, batch_size=self.batch_size, loaded=(self.tokenizer, model),
            )
        return self._scorer


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
