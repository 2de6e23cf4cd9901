"""A generator behind the request cache, the cost meter and the spend ledger.

`CachedCalls` answers requests from the cache first and sends the rest in one call, counting what was sent (its
`CostMeter`) and recording it in the run's spend ledger before it is cached; it knows nothing of prompts' forms,
validation or retries, which are `StructuredClient`'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from crossknow.errors import CrossknowError
from crossknow.generation.pricing import PriceTable
from crossknow.models.generator import (
    AnswerContinuation,
    ChatMessage,
    GenerateRequest,
    GenerateResult,
    GenerationFailed,
    Generator,
    ServerGenerator,
    TokenAlternatives,
    Usage,
)
from crossknow.store.request_cache import RequestCache, cache_key
from crossknow.store.spend_ledger import Paid, SpendLedger


@dataclass
class CostMeter:
    """Running totals of what a client actually sent to its backend (cache hits cost nothing)."""

    calls: int = 0
    """Requests sent to the backend, failed ones included."""
    cached_calls: int = 0
    """Requests answered from the cache."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    """Wall-clock time spent in `call_many`."""


def sum_meters(meters: Iterable[CostMeter]) -> CostMeter:
    """One meter holding the totals of several (the clients of several models); a meter given twice (one client
    in two roles, `crossknow.generation.clients`) counts once."""
    total = CostMeter()
    for meter in {id(meter): meter for meter in meters}.values():
        for name, value in dataclasses.asdict(meter).items():
            setattr(total, name, getattr(total, name) + value)
    return total


class CachedCalls:
    """`generator`'s generate and score_answers calls through `cache` (None: no cache), metered at `prices`."""

    def __init__(self, generator: Generator, cache: RequestCache | None, prices: PriceTable):
        self.generator = generator
        self.cache = cache
        self.prices = prices
        self.meter = CostMeter()
        self.ledger: SpendLedger | None = None
        self.ledger_label = ""

    def record_spend(self, ledger: SpendLedger | None, label: str = "") -> None:
        """Record every request sent from now on in `ledger` (None: stop), labelled `label`, before its answer goes
        into the cache: the run's whole spend then counts a request that a resumed invocation replays from the
        cache once (see `crossknow.store.spend_ledger`)."""
        self.ledger, self.ledger_label = ledger, label

    def score_answers(self, requests: list[AnswerContinuation]) -> tuple[list[float], list[bool]]:
        """The generator's `score_answers`, through the cache: (log-probabilities, whether each came from the cache)."""
        backend, model_id = self.generator.name, self.generator.model_id
        identities = [
            {
                "backend": backend, "model_id": model_id, "kind": "answer_continuation",
                **_prompt_identity(r.prompt, r.messages),
                "answer_prefix": r.answer_prefix, "continuation": r.continuation,
            }
            for r in requests
        ]
        keys = [cache_key(identity) for identity in identities]
        stored = self.cache.get_many(keys) if self.cache is not None else [None] * len(requests)
        missing = [k for k, value in enumerate(stored) if not isinstance(value, dict) or "logprob" not in value]
        logprobs = [float(value["logprob"]) if k not in missing else 0.0 for k, value in enumerate(stored)]
        if missing:
            fresh = self.generator.score_answers([requests[k] for k in missing])  # type: ignore[attr-defined]
            for k, value in zip(missing, fresh, strict=True):
                logprobs[k] = value
            if self.cache is not None:
                self.cache.put_many([(keys[k], identities[k], {"logprob": logprobs[k]}) for k in missing])
        fresh_keys = set(missing)
        return logprobs, [k not in fresh_keys for k in range(len(requests))]

    def generate(self, requests: list[GenerateRequest]) -> list[tuple[GenerateResult | None, bool, str | None]]:
        """(result, from cache, failure) per request: cache first, then one generate call for the rest
        (identical requests are sent once)."""
        backend, model_id = self.generator.name, self.generator.model_id
        identities = [request_identity(self.generator, r) for r in requests]
        keys = [cache_key(identity) for identity in identities]
        stored = self.cache.get_many(keys) if self.cache is not None else [None] * len(requests)
        answers: list[tuple[GenerateResult | None, bool, str | None] | None] = [None] * len(requests)
        for k, value in enumerate(stored):
            result = result_from_dict(value) if value is not None else None
            if result is not None:
                answers[k] = (result, True, None)
        missing = [k for k, answer in enumerate(answers) if answer is None]
        self.meter.cached_calls += len(requests) - len(missing)
        first: dict[str, int] = {}  # key -> its first request: identical requests are sent once
        for k in missing:
            first.setdefault(keys[k], k)
        sent = {key: j for j, key in enumerate(first)}  # key -> position in the generate call
        if sent:
            to_send = [requests[k] for k in first.values()]
            self.meter.calls += len(to_send)
            try:
                fresh: list[GenerateResult | None] = list(self.generator.generate(to_send))
                failures: dict[int, str] = {}
            except GenerationFailed as error:
                fresh, failures = error.results, error.failures
            if len(fresh) != len(to_send):
                raise CrossknowError(
                    f"generator {backend!r} returned {len(fresh)} results for {len(to_send)} requests"
                )
            entries, paid = [], []
            for key, j in sent.items():
                result = fresh[j]
                if result is None:
                    paid.append(Paid(None))  # never cached, so never replayed: it counts every time it is sent
                    continue
                cost = self.prices.cost(backend, model_id, result.usage)
                self.meter.prompt_tokens += result.usage.prompt_tokens
                self.meter.completion_tokens += result.usage.completion_tokens
                self.meter.cost_usd += cost
                entries.append((key, identities[first[key]], result_to_dict(result)))
                paid.append(Paid(key if self.cache is not None else None, result.usage.prompt_tokens,
                                 result.usage.completion_tokens, cost))
            for k in missing:
                j = sent[keys[k]]
                answers[k] = (fresh[j], False, failures.get(j))
            if self.ledger is not None:  # before the cache: what a later invocation replays is recorded already
                self.ledger.record(self.ledger_label, paid)
            if self.cache is not None and entries:
                self.cache.put_many(entries)
        return answers  # type: ignore[return-value]


def request_identity(generator: Generator, request: GenerateRequest) -> dict[str, Any]:
    """What a request's cache key hashes: backend, server, model id, messages or prompt, settings and schema.

    The server is a `ServerGenerator`'s `server_identity()` (base URL and the settings that shape what
    the server receives); local backends have none. Keying by server is new: cache entries of server
    requests written before it are no longer found (asked again once), those of local models still are."""
    server = {"server": generator.server_identity()} if isinstance(generator, ServerGenerator) else {}
    return {
        "backend": generator.name,
        "model_id": generator.model_id,
        **server,
        **_prompt_identity(request.prompt, request.messages),
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "seed": request.seed,
        "top_logprobs": request.top_logprobs,
        "json_schema": request.json_schema,
    } | ({"stop": list(request.stop)} if request.stop else {})


def _prompt_identity(prompt: str | None, messages: Sequence[ChatMessage]) -> dict[str, Any]:
    """The prompt part of a cache identity: a completion prompt's text, or the chat messages (keyed as before
    completion prompts existed, so that chat entries written then are still found)."""
    if prompt is not None:
        return {"prompt": prompt}
    return {"messages": [[m.role, m.content] for m in messages]}


def result_to_dict(result: GenerateResult) -> dict[str, Any]:
    """A GenerateResult as JSON-ready data."""
    return dataclasses.asdict(result)


def result_from_dict(data: dict[str, Any]) -> GenerateResult | None:
    """The GenerateResult that `result_to_dict` wrote; None for an entry of another shape."""
    try:
        logprobs = data.get("logprobs")
        return GenerateResult(
            text=data["text"],
            backend=data["backend"],
            model_id=data["model_id"],
            usage=Usage(**(data.get("usage") or {})),
            logprobs=None
            if logprobs is None
            else tuple(
                TokenAlternatives(t["token"], float(t["logprob"]), tuple((str(a), float(b)) for a, b in t["top"]))
                for t in logprobs
            ),
            finish_reason=data.get("finish_reason"),
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
