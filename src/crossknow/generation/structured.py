"""Structured (JSON-schema) or parsed free-text outputs from any Generator: validation and retries.

`StructuredClient.call_many` sends every pending prompt in one `generate` call, validates each output (pydantic, or a
`TextOutput`'s parser) and retries only the invalid ones, attempt k with seed + k; what stays invalid is returned with
its reason, never raised or dropped. A `ChatPrompt` or `CompletionPrompt` is asked in the form `prompt_format` names;
a completion's retry samples at `RETRY_TEMPERATURE` (crossknow's choice; docs/scoring.md, "How a stage asks").
The cache, meter and spend ledger are `CachedCalls`'; exact yes/no scores are `crossknow.generation.confidence`'s.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from crossknow.errors import CrossknowError
from crossknow.generation.ask import (
    YES_NO,
    Ask,
    CompletionPrompt,
    NoCompletion,
    Part,
    Parts,
    Prompt,
    Reading,
    TextOutput,
    TextParser,
)
from crossknow.generation.cached_calls import CachedCalls, CostMeter
from crossknow.generation.confidence import (
    answer_probability,
    calibrated_yes_probability,
    scored_field_yes,
    scored_yes_no,
    value_prefix,
    yes_probability,
)
from crossknow.generation.pricing import PriceTable
from crossknow.models.generator import (
    AnswerScorer,
    ChatMessage,
    GenerateRequest,
    GenerateResult,
    Generator,
    Usage,
)
from crossknow.store.request_cache import RequestCache
from crossknow.store.spend_ledger import SpendLedger

T = TypeVar("T", bound=BaseModel)
P = TypeVar("P")
"""A stage's procedure for one form of model (`StructuredClient.per_form`)."""

TRANSPORT_FAILURE = "request failed"
"""How `StructuredOutcome.error` starts when the request itself failed (after the backend's own
retries), as opposed to an invalid output; such outcomes are not cached and worth a re-run."""
RETRY_NOTE = "\n\nReturn only a JSON object that matches this JSON schema, with no other text:\n{schema}"
"""Appended to the user message from the second attempt on."""
RETRY_TEMPERATURE = 0.7
"""The sampling temperature of a completion prompt's retries (at least; the client's own when higher)."""
YES_THRESHOLD = 0.5
"""P(yes) at or above which a stage reads a completion prompt's yes/no answer as yes (crossknow's choice: the more
likely of the two words)."""


def prompt_format_of(generator: Generator) -> str:
    """'chat' or 'completion': the form `generator` is asked in where a stage can ask either way (chat for a
    generator that does not say)."""
    return getattr(generator, "prompt_format", "chat")


def per_form(form: str, *, chat: P, completion: P) -> P:
    """Of a stage's two procedures (or settings), the one for a model asked in `form`, where a base model runs
    another procedure than a chat model and not only another rendering (`StructuredClient.ask_many` covers those):
    a field asked from an earlier field's answer, review rounds, a value computed by code instead of asked, a
    shorter token budget. Each form is named, so a form of model added later stops every such stage until it has
    a procedure of its own."""
    chosen = {"chat": chat, "completion": completion}
    if form not in chosen:
        raise CrossknowError(f"no procedure for a model asked in the {form!r} form")
    return chosen[form]


@dataclass(frozen=True)
class StructuredOutcome(Generic[T]):
    """The result of one prompt after validation and retries."""

    value: T | None
    """The validated pydantic object (a TextOutput parser's value for free text); None when the output
    was invalid after all attempts."""
    raw_text: str
    """The last raw output ('' when no attempt produced any)."""
    error: str | None
    """Why the output is invalid; None when valid."""
    yes_probability: float | None
    """P("yes") of the confidence field: exact over the two scored values from a backend that scores
    (local models), else from top log-probabilities (or 1.0/0.0 from the parsed answer when the
    backend gives none); None when not asked or the output is invalid."""
    attempts: int
    """Model calls made for this prompt, cached ones included."""
    cached: bool
    """True when every attempt used came from the cache."""
    usage: Usage
    """Token usage summed over attempts, cached ones included: what the answer took to produce."""
    cost_usd: float
    """Cost of that usage at the client's prices, the same whether or not it came from the cache
    (the client's `meter` counts what was spent now)."""
    raw_yes_probability: float | None = None
    """`yes_no_many` only: P(yes) as the model gave it, before any calibration (equal to `yes_probability` where
    none was asked for); None elsewhere."""

    @property
    def valid(self) -> bool:
        """True when `value` holds a validated object."""
        return self.value is not None


@dataclass
class _Progress:
    """What one prompt has accumulated over its attempts."""

    attempts: int = 0
    cached: bool = True
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    raw_text: str = ""
    request: GenerateRequest | None = None
    """The last request sent for the prompt."""


class StructuredClient:
    """Asks a Generator for JSON that validates against a pydantic model; see the module docstring."""

    def __init__(
        self,
        generator: Generator,
        cache: RequestCache | None = None,
        *,
        max_attempts: int = 3,
        prices: PriceTable | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
        seed: int = 0,
    ):
        if max_attempts < 1:
            raise CrossknowError(f"max_attempts must be at least 1, got {max_attempts}")
        if max_tokens < 1:
            raise CrossknowError(f"max_tokens must be at least 1, got {max_tokens}")
        self.generator = generator
        self.calls = CachedCalls(generator, cache, prices or PriceTable())
        """The generator behind the cache, the meter and the spend ledger."""
        self.max_attempts = max_attempts
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed

    @property
    def meter(self) -> CostMeter:
        """What this client sent to its backend (cache hits cost nothing)."""
        return self.calls.meter

    def record_spend(self, ledger: SpendLedger | None, label: str = "") -> None:
        """`CachedCalls.record_spend`: every request sent from now on recorded in `ledger`, labelled `label`."""
        self.calls.record_spend(ledger, label)

    @property
    def prompt_format(self) -> str:
        """'chat' or 'completion': the form this client's model is asked in where a stage can ask either way."""
        return prompt_format_of(self.generator)

    def per_form(self, *, chat: P, completion: P) -> P:
        """`per_form` for this client's model."""
        return per_form(self.prompt_format, chat=chat, completion=completion)

    def ask_many(
        self, asks: Sequence[Ask], reading: Reading, *, seeds: Sequence[int] | None = None
    ) -> list[StructuredOutcome]:
        """One outcome per ask, in order, each asked in the rendering this client's model takes (`prompt_format`) and
        read as `reading` says for that form: `call_many` (chat asks grouped by their output, a base model's parts
        all in one call and assembled), or `yes_no_many` for a YES_NO completion (which takes no seeds: it scores,
        or reads the written word greedily). A base model asked a question with `NoCompletion` raises its reason
        before any request."""
        base_seeds = list(seeds) if seeds is not None else [self.seed] * len(asks)
        if self.prompt_format != "completion":
            return self._ask_chat(asks, reading, base_seeds)
        refused = next((ask.completion for ask in asks if isinstance(ask.completion, NoCompletion)), None)
        if refused is not None:
            raise CrossknowError(refused.why)
        if reading.completion == YES_NO:
            return self.yes_no_many([ask.completion for ask in asks])  # type: ignore[misc]
        output = reading.completion
        assert not isinstance(output, str)
        default = self._output_form(output, None)[2]
        asked = [(k, part) for k, ask in enumerate(asks) for part in _parts(ask)]
        outcomes = self.call_many([part.prompt for _, part in asked], output,
                                  seeds=[base_seeds[k] if part.seed is None else part.seed for k, part in asked],
                                  parsers=[part.parse or default for _, part in asked])
        by_ask: list[list[StructuredOutcome]] = [[] for _ in asks]
        for (k, _), outcome in zip(asked, outcomes, strict=True):
            by_ask[k].append(outcome)
        return [_assembled(ask.completion, mine) if isinstance(ask.completion, Parts) else mine[0]
                for ask, mine in zip(asks, by_ask, strict=True)]

    def _ask_chat(self, asks: Sequence[Ask], reading: Reading, seeds: list[int]) -> list[StructuredOutcome]:
        """`ask_many` for a chat model: one `call_many` per chat output (the Reading's, or an ask's own)."""
        outcomes: list[StructuredOutcome | None] = [None] * len(asks)
        outputs = [ask.chat_output or reading.chat for ask in asks]
        for output in dict.fromkeys(outputs):
            mine = [k for k, other in enumerate(outputs) if other is output]
            default = self._output_form(output, None)[2]
            parsers = [asks[k].chat_parse for k in mine]
            answered = self.call_many([asks[k].chat for k in mine], output, seeds=[seeds[k] for k in mine],
                                      parsers=[parse or default for parse in parsers] if any(parsers) else None)
            for k, outcome in zip(mine, answered, strict=True):
                outcomes[k] = outcome
        return outcomes  # type: ignore[return-value]

    def call_many(
        self,
        prompts: Sequence[Prompt],
        schema: type[BaseModel] | TextOutput,
        *,
        confidence_field: str | None = None,
        top_logprobs: int = 5,
        seeds: Sequence[int] | None = None,
        parsers: Sequence[TextParser] | None = None,
    ) -> list[StructuredOutcome]:
        """One outcome per prompt (chat or completion), in order. `schema` is a pydantic model (JSON output validated
        against it) or a TextOutput (free text and its parser). `confidence_field` names a yes/no
        field of a pydantic `schema` whose P(yes) is wanted (`crossknow.generation.confidence`); top
        log-probabilities are asked for only then, and only from a backend that cannot score
        continuations. `seeds`: one base seed per prompt (default: the client's seed for all). `parsers`: one
        parser per prompt, in place of the schema's own (an answer valid for one question only); a pydantic
        `schema` still sends its JSON schema and the parser alone decides validity."""
        if seeds is not None and len(seeds) != len(prompts):
            raise CrossknowError(f"{len(seeds)} seeds for {len(prompts)} prompts")
        if parsers is not None and len(parsers) != len(prompts):
            raise CrossknowError(f"{len(parsers)} parsers for {len(prompts)} prompts")
        json_schema, note, parse = self._output_form(schema, confidence_field)
        base_seeds = list(seeds) if seeds is not None else [self.seed] * len(prompts)
        started = time.monotonic()
        scores = confidence_field is not None and isinstance(self.generator, AnswerScorer)
        top = top_logprobs if confidence_field and not scores else 0
        progress = [_Progress() for _ in prompts]
        outcomes: list[StructuredOutcome | None] = [None] * len(prompts)
        pending = list(range(len(prompts)))
        try:
            for attempt in range(self.max_attempts):
                if not pending:
                    break
                requests = [
                    self._request(prompts[i], base_seeds[i] + attempt, attempt, json_schema, note, top) for i in pending
                ]
                retry = []
                answers = self.calls.generate(requests)
                for i, request, (result, cached, failure) in zip(pending, requests, answers, strict=True):
                    progress[i].request = request
                    done = self._record(
                        progress[i], result, cached, failure, parsers[i] if parsers else parse,
                        None if scores else confidence_field,
                    )
                    if isinstance(done, StructuredOutcome):
                        outcomes[i] = done
                    elif attempt + 1 < self.max_attempts:
                        retry.append(i)
                    else:
                        outcomes[i] = self._outcome(progress[i], None, done, None)
                pending = retry
            if scores:
                outcomes = self._with_scored_confidence(outcomes, progress, confidence_field)  # type: ignore[arg-type]
        finally:
            self.meter.seconds += time.monotonic() - started
        return outcomes  # type: ignore[return-value]

    # ---- one attempt ------------------------------------------------------------------------

    @staticmethod
    def _output_form(
        schema: type[BaseModel] | TextOutput, confidence_field: str | None
    ) -> tuple[dict | None, str, TextParser]:
        """(JSON schema of the request or None for free text, retry note, parser) of `schema`."""
        if isinstance(schema, TextOutput):
            if confidence_field is not None:
                raise CrossknowError("a confidence field needs a JSON schema; free text (TextOutput) has none")
            return None, schema.retry_note, schema.parse
        if confidence_field is not None and confidence_field not in schema.model_fields:
            raise CrossknowError(
                f"confidence field {confidence_field!r} is not a field of {schema.__name__} "
                f"(fields: {', '.join(schema.model_fields)})"
            )
        json_schema = schema.model_json_schema()
        note = RETRY_NOTE.format(schema=json.dumps(json_schema, ensure_ascii=False, separators=(",", ":")))
        return json_schema, note, lambda text: parse_structured(text, schema)

    def _request(
        self, prompt: Prompt, seed: int, attempt: int, json_schema: dict | None, note: str, top: int
    ) -> GenerateRequest:
        if isinstance(prompt, CompletionPrompt):
            return GenerateRequest(
                prompt=prompt.text,
                max_tokens=self.max_tokens,
                temperature=max(self.temperature, RETRY_TEMPERATURE) if attempt else self.temperature,
                seed=seed,
                json_schema=json_schema,
                top_logprobs=top,
                stop=prompt.stop,
            )
        messages = [ChatMessage("system", prompt.system)] if prompt.system else []
        messages.append(ChatMessage("user", prompt.user + (note if attempt else "")))
        return GenerateRequest(
            messages=tuple(messages),
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            seed=seed,
            json_schema=json_schema,
            top_logprobs=top,
            stop=prompt.stop,
        )

    def _record(
        self,
        progress: _Progress,
        result: GenerateResult | None,
        cached: bool,
        failure: str | None,
        parse: TextParser,
        confidence_field: str | None,
    ) -> StructuredOutcome | str:
        """Account one attempt: the final outcome when the output is valid or the request failed in
        transport, else why the output is invalid."""
        progress.attempts += 1
        progress.cached = progress.cached and cached
        if result is None:
            return self._outcome(progress, None, f"{TRANSPORT_FAILURE}: {failure or 'no result'}", None)
        progress.prompt_tokens += result.usage.prompt_tokens
        progress.completion_tokens += result.usage.completion_tokens
        progress.cost_usd += self.calls.prices.cost(self.generator.name, self.generator.model_id, result.usage)
        progress.raw_text = result.text
        value, error = parse(result.text)
        if value is None:
            if result.finish_reason == "length":
                error = f"{error} (the output stopped at max_tokens={self.max_tokens})"
            elif result.finish_reason == "repetition":
                error = f"{error} (the output was stopped looping inside a JSON string)"
            return error or "invalid output"
        confidence = None
        if confidence_field is not None:
            confidence = yes_probability(result.logprobs, confidence_field, getattr(value, confidence_field))
        return self._outcome(progress, value, None, confidence)

    @staticmethod
    def _outcome(progress: _Progress, value: Any, error: str | None, confidence: float | None) -> StructuredOutcome:
        return StructuredOutcome(
            value=value,
            raw_text=progress.raw_text,
            error=error,
            yes_probability=confidence,
            attempts=progress.attempts,
            cached=progress.cached,
            usage=Usage(progress.prompt_tokens, progress.completion_tokens),
            cost_usd=progress.cost_usd,
        )

    def _with_scored_confidence(
        self, outcomes: list[StructuredOutcome | None], progress: list[_Progress], field: str
    ) -> list[StructuredOutcome | None]:
        """The valid outcomes with P(yes) of `field` scored exactly (cached like model calls); 1.0 or 0.0
        from the parsed answer where the output does not show the field's value as text."""
        asked: list[tuple[int, GenerateRequest, str]] = []
        result = list(outcomes)
        for i, outcome in enumerate(outcomes):
            if outcome is None or not outcome.valid:
                continue
            prefix = value_prefix(outcome.raw_text, field)
            if prefix is None:  # the value is not where it can be scored: 1.0 or 0.0 from the answer
                answer = getattr(outcome.value, field)
                result[i] = dataclasses.replace(outcome, yes_probability=yes_probability(None, field, answer))
                continue
            request = progress[i].request
            assert request is not None  # a valid outcome had a request
            asked.append((i, request, prefix))
        confidences = scored_field_yes(self.calls, [(request, prefix) for _, request, prefix in asked])
        for (i, _, _), confidence in zip(asked, confidences, strict=True):
            result[i] = dataclasses.replace(outcomes[i], yes_probability=confidence)  # type: ignore[arg-type]
        return result

    def yes_no_many(
        self, prompts: Sequence[CompletionPrompt], baselines: Sequence[float | None] | None = None
    ) -> list[StructuredOutcome]:
        """P(yes) after each completion prompt (which ends where the answer starts), as the outcome's
        `value` and `yes_probability`. Exact from a generator that scores: p(" yes") / (p(" yes") + p(" no"))
        over the two continuations scored after the prompt (`YES_NO_WORDS`; cached, never invalid), each calibrated
        against its baseline where `baselines` (one per prompt) gives one (`yes_no_baseline` of the same prompt with
        content-free inputs; see `calibrated_yes_probability`); the uncalibrated value stays in `raw_yes_probability`.
        From any other, 1.0 or 0.0 from the word the model writes, through `call_many` (an answer that is neither yes
        nor no is invalid, retried, then recorded)."""
        if not isinstance(self.generator, AnswerScorer):
            parse = TextOutput(_parse_yes_no)
            outcomes = self.call_many(prompts, parse)
            return [dataclasses.replace(o, yes_probability=o.value, raw_yes_probability=o.value) for o in outcomes]
        result = []
        for k, (raw, from_cache) in enumerate(self._scored_yes_no(prompts)):
            p_yes = raw
            if baselines is not None and baselines[k] is not None:
                p_yes = calibrated_yes_probability(raw, baselines[k])
            result.append(StructuredOutcome(p_yes, "", None, p_yes, 1, from_cache, Usage(), 0.0, raw))
        return result

    def _scored_yes_no(self, prompts: Sequence[CompletionPrompt]) -> list[tuple[float, bool]]:
        started = time.monotonic()
        try:
            return scored_yes_no(self.calls, prompts)
        finally:
            self.meter.seconds += time.monotonic() - started

    def yes_no_baseline(self, content_free: Sequence[CompletionPrompt]) -> float | None:
        """The mean P(yes) after `content_free` (one yes/no prompt with its inputs replaced by
        `CONTENT_FREE_INPUTS`): the lean of the prompt alone, which `yes_no_many(..., baselines)` divides out
        (contextual calibration, Zhao et al., 2021; crossknow's choice for base models, whose few-shot yes/no
        leans differ by language). None from a generator that does not score (its P(yes) is 0 or 1: nothing to
        calibrate)."""
        if not content_free or not isinstance(self.generator, AnswerScorer):
            return None
        values = [p_yes for p_yes, _ in self._scored_yes_no(content_free)]
        return sum(values) / len(values)


def _parts(ask: Ask) -> tuple[Part, ...]:
    """The completion prompts of `ask`: its parts, or its one prompt as a part with the ask's parser."""
    if isinstance(ask.completion, Parts):
        return ask.completion.parts
    return (Part(ask.completion, ask.completion_parse),)


def _assembled(parts: Parts, outcomes: list[StructuredOutcome]) -> StructuredOutcome:
    """The outcome of a question asked in parts: `parts.assemble` of the parts' values, or the error `parts.worst`
    picks among the invalid parts'; attempts, usage and cost summed, cached when every part was."""
    errors = [outcome.error or "invalid output" for outcome in outcomes if not outcome.valid]
    if errors:
        value, error = None, (parts.worst or (lambda found: found[0]))(errors)
    else:
        value, error = parts.assemble([outcome.value for outcome in outcomes])
    return StructuredOutcome(
        value=None if error else value, raw_text="\n".join(outcome.raw_text for outcome in outcomes), error=error,
        yes_probability=None, attempts=sum(outcome.attempts for outcome in outcomes),
        cached=all(outcome.cached for outcome in outcomes),
        usage=Usage(sum(o.usage.prompt_tokens for o in outcomes), sum(o.usage.completion_tokens for o in outcomes)),
        cost_usd=sum(outcome.cost_usd for outcome in outcomes),
    )


# ---- parsing ------------------------------------------------------------------------------------

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.S)


def parse_structured(text: str, schema: type[T]) -> tuple[T | None, str | None]:
    """(validated object, None) or (None, why not). Tolerates a ```json fence and text around
    one JSON object; reports a schema error in preference to a JSON syntax error."""
    stripped = text.strip()
    if not stripped:
        return None, "empty output"
    candidates = [stripped]
    fence = _FENCE.search(stripped)
    if fence:
        candidates.append(fence.group(1).strip())
    start, end = stripped.find("{"), stripped.rfind("}")
    if 0 <= start < end:
        candidates.append(stripped[start : end + 1])
    errors: list[str] = []
    for candidate in dict.fromkeys(candidates):
        try:
            return schema.model_validate_json(candidate), None
        except ValidationError as error:
            errors.append(_describe(error))
    schema_errors = [e for e in errors if not e.startswith("not valid JSON")]
    return None, (schema_errors or errors)[0]


def _parse_yes_no(text: str) -> tuple[float | None, str | None]:
    """1.0 or 0.0 for an output whose first word is yes or no, else why not."""
    words = text.split()
    answer = answer_probability(words[0]) if words else None
    if answer is None:
        return None, f"neither yes nor no: {text[:80]!r}"
    return answer, None


def _describe(error: ValidationError, limit: int = 3) -> str:
    """A short account of a pydantic validation error."""
    problems = error.errors()
    if any(p["type"] == "json_invalid" for p in problems):
        return f"not valid JSON: {problems[0]['msg']}"
    parts = [f"field '{'.'.join(str(x) for x in p['loc']) or '(root)'}': {p['msg']}" for p in problems[:limit]]
    more = f" (and {len(problems) - limit} more)" if len(problems) > limit else ""
    return "; ".join(parts) + more
