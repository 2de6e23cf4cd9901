"""The proxy LLM (Appendix B.1): its two clients, perturbation and translation, and the translation of texts and
pairs through it; shared by `crossknow pitfalls probe` (whose transformations write perturbations with the
perturbation client, `crossknow.pitfalls.probe.transformation`) and `crossknow pitfalls expand` (which translates seed
pairs with the translation client).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from pydantic import BaseModel, ConfigDict, Field

from crossknow.data.languages import language_code
from crossknow.generation.ask import Ask, ChatPrompt, CompletionPrompt, Reading, TextParser
from crossknow.generation.clients import ClientPool, Role
from crossknow.generation.pricing import PriceTable
from crossknow.generation.structured import StructuredClient, parse_structured, per_form, prompt_format_of
from crossknow.models.generator import Generator
from crossknow.pitfalls.pair_translation import FIELD, coded, field_parser, translate_pairs, translation_examples
from crossknow.pitfalls.prompts import TRANSLATE_TEXT_TEMPLATE, translation_completion
from crossknow.pitfalls.simulate import MCQuestion
from crossknow.store.request_cache import RequestCache

ADOPTED_PROXY = "proxy"
"""The name `ProxyLLM.from_generator` adopts its generator under in its pool."""


class TranslatedText(BaseModel):
    """The proxy's translation of inserted text."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, description="The translation.")


@dataclass
class ProxyLLM:
    """The proxy's two clients: perturbation at temperature 0.7, translation at 0.001 (Appendix B.1); both greedy
    for a base model asked by completion (crossknow's choice: a 270M base model's sampled lines are mostly noise).
    Both come from `pool`, as model `spec` with `role`'s server, key, output cap and attempts."""

    perturber: StructuredClient
    translator: StructuredClient
    pool: ClientPool
    """The pool the clients came from (`client_at` asks it for another)."""
    spec: str
    """The proxy's model spec (or the name it was adopted under) in `pool`."""
    role: Role
    """The proxy's role in `pool`; the two clients set its temperature."""

    @classmethod
    def from_generator(
        cls, generator: Generator, cache: RequestCache | None = None, *, prices: PriceTable | None = None,
        max_tokens: int = 1024, max_attempts: int = 3,
    ) -> ProxyLLM:
        """Both clients over a Generator the caller holds, sharing `cache` (the caller's; None: no cache); max output
        1,024 tokens."""
        pool = ClientPool.over(cache, prices)
        pool.adopt(ADOPTED_PROXY, generator)
        return cls.from_pool(pool, ADOPTED_PROXY, Role(max_tokens=max_tokens, max_attempts=max_attempts))

    @classmethod
    def from_pool(cls, pool: ClientPool, spec: str, role: Role) -> ProxyLLM:
        """Both clients of model `spec` from `pool`, with `role`'s server, key, output cap and attempts (one
        client where the two temperatures are the same: a base model asked by completion)."""
        perturbation, translation = proxy_temperatures(pool.generator(spec, role))
        return cls(pool.client(spec, replace(role, temperature=perturbation)),
                   pool.client(spec, replace(role, temperature=translation)), pool, spec, role)

    def client_at(self, temperature: float) -> StructuredClient:
        """A client of the proxy's model at `temperature`, with the proxy's server, cache, prices, output cap and
        attempts (the translator itself where the temperature is the translator's)."""
        return self.pool.client(self.spec, replace(self.role, temperature=temperature))

    def translate(self, texts: Sequence[str], language: str) -> list[tuple[str | None, str | None]]:
        """(translation, None) or (None, 'translation <reason code>: <why not>') per text; '' translates to ''.
        Chat: crossknow's `TRANSLATE_TEXT_TEMPLATE` (JSON); completion: crossknow's few-shot
        `translation_completion`, one line (the examples of `language`'s code, by `language_code`). Either way an
        output that copies its text (completion: or mostly copies it) or echoes the prompt is rejected
        (`field_problem`; on the completion path also an output that repeats an example's translation)."""
        lang = language_code(language)
        asked = [i for i, text in enumerate(texts) if text.strip()]
        asks = [Ask(ChatPrompt(None, TRANSLATE_TEXT_TEMPLATE.format(language=language, text=texts[i])),
                    CompletionPrompt(translation_completion(texts[i], lang, language)),
                    chat_parse=_translated_text_parser(field_parser((texts[i],), language, mostly=False)),
                    completion_parse=field_parser((texts[i],), language,
                                                  examples=translation_examples(lang, (texts[i],))))
                for i in asked]
        outcomes = self.translator.ask_many(asks, TRANSLATION_READING) if asks else []
        result: list[tuple[str | None, str | None]] = [("", None)] * len(texts)
        for i, outcome in zip(asked, outcomes, strict=True):
            valid = outcome.valid
            result[i] = (_text(outcome.value), None) if valid else (None, f"translation {coded(outcome.error or '')}")
        return result

    def translate_questions(self, questions: Sequence[MCQuestion], lang: str, language: str) -> list[MCQuestion | str]:
        """Each question with its choices and answer translated and checked (the bilingual-pair stage,
        `crossknow.pitfalls.pair_translation`), or '<reason code>: <why not>'."""
        return translate_pairs(self.translator, questions, lang, language)


def proxy_temperatures(generator: Generator) -> tuple[float, float]:
    """(perturbation, translation) temperatures of the proxy `generator`: Appendix B.1's 0.7 and 0.001, or both 0
    for a base model asked by completion (see `ProxyLLM`)."""
    return per_form(prompt_format_of(generator), chat=(0.7, 0.001), completion=(0.0, 0.0))


TRANSLATION_READING = Reading(TranslatedText, FIELD)
"""A chat model's JSON translation, a base model's one line; each text's own parser checks either."""


def _translated_text_parser(check: TextParser) -> TextParser:
    """The parser of a chat translation {"text": ...}: the JSON object, then `check` on its text."""

    def parse(text: str) -> tuple[TranslatedText | None, str | None]:
        value, error = parse_structured(text, TranslatedText)
        if value is None:
            return None, error
        _, problem = check(value.text)
        return (None, problem) if problem else (value, None)

    return parse


def _text(value: TranslatedText | str) -> str:
    """The translated text of a chat (TranslatedText) or completion (str) outcome."""
    return (value.text if isinstance(value, TranslatedText) else value).strip()
