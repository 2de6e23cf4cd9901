"""What model calls cost: a table of USD per million prompt and completion tokens.

Built in: a few OpenAI models at their list prices (checked 2025); a YAML or JSON file of the same shape, such as
`gpt-4.1: {prompt: 2.00, completion: 8.00}`, overrides or extends it. Local backends cost nothing; an `openai:` model
the table does not list (usually a local vLLM or llama.cpp server) counts as 0 USD, with one warning per model id,
so that a paid model missing from the table does not go unnoticed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from crossknow.data.guarded import MAX_TABLE_BYTES, parse_json, parse_yaml, read_text
from crossknow.errors import InputError
from crossknow.models.generator import Usage

log = logging.getLogger(__name__)

LOCAL_BACKENDS = frozenset({"default", "hf", "gguf", "llamacpp"})
"""Backends that run on the user's machine: their calls cost 0 USD."""


class ModelPrice(BaseModel):
    """List price of one model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt: float = Field(ge=0, strict=True, allow_inf_nan=False)
    """USD per 1,000,000 prompt (input) tokens."""
    completion: float = Field(ge=0, strict=True, allow_inf_nan=False)
    """USD per 1,000,000 completion (output) tokens."""

    def cost(self, usage: Usage) -> float:
        """USD for one call's token usage."""
        return (usage.prompt_tokens * self.prompt + usage.completion_tokens * self.completion) / 1_000_000


DEFAULT_PRICES: Mapping[str, ModelPrice] = {
    "gpt-4.1": ModelPrice(prompt=2.00, completion=8.00),
    "gpt-4.1-mini": ModelPrice(prompt=0.40, completion=1.60),
    "gpt-4.1-nano": ModelPrice(prompt=0.10, completion=0.40),
    "gpt-4o": ModelPrice(prompt=2.50, completion=10.00),
    "gpt-4o-mini": ModelPrice(prompt=0.15, completion=0.60),
}
"""Built-in prices, USD per million tokens (OpenAI list prices, standard tier)."""

_DATED = re.compile(r"-\d{4}-\d{2}-\d{2}$")


class PriceTable:
    """Model id -> ModelPrice, the built-in prices extended or overridden by `prices`."""

    def __init__(self, prices: Mapping[str, ModelPrice] | None = None):
        self.prices: dict[str, ModelPrice] = {**DEFAULT_PRICES, **(prices or {})}
        self._warned: set[str] = set()

    @classmethod
    def load(cls, path: str | Path) -> PriceTable:
        """The built-in table extended by a YAML or JSON file mapping model id -> {prompt, completion}."""
        path = Path(path)
        text = read_text(path, MAX_TABLE_BYTES)
        data = parse_json(text, path) if path.suffix.lower() == ".json" else parse_yaml(text, path)
        if not isinstance(data, dict):
            raise InputError(path, "expected a mapping of model id -> {prompt: USD, completion: USD} per 1M tokens")
        prices: dict[str, ModelPrice] = {}
        for model, entry in data.items():
            try:
                prices[str(model)] = ModelPrice.model_validate(entry)
            except ValidationError as error:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or 'entry'}: {e['msg']}" for e in error.errors()
                )
                raise InputError(path, problems, field=str(model)) from None
        return cls(prices)

    def price(self, backend: str, model_id: str) -> ModelPrice | None:
        """The price of a model: exact id, then without a date suffix (gpt-4.1-2025-04-14) or an
        'openai/' prefix; a zero price for local backends; None when unknown."""
        if backend in LOCAL_BACKENDS:
            return ModelPrice(prompt=0, completion=0)
        name = model_id.removeprefix("openai/")
        for candidate in (model_id, name, _DATED.sub("", name)):
            if candidate in self.prices:
                return self.prices[candidate]
        return None

    def cost(self, backend: str, model_id: str, usage: Usage) -> float:
        """USD for one call; 0 for unknown models (warned once per model id)."""
        price = self.price(backend, model_id)
        if price is None:
            if model_id not in self._warned:
                self._warned.add(model_id)
                log.warning(
                    "no price for model %r: its calls are counted as 0 USD; add it to a price file "
                    "(model: {prompt: USD, completion: USD} per 1M tokens)",
                    model_id,
                )
            return 0.0
        return price.cost(usage)
