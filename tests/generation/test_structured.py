"""StructuredClient bookkeeping with a scripted generator (pure logic; the real servers and the
embedded model are tested in test_structured_backends.py)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict

from crossknow.errors import CrossknowError
from crossknow.generation.ask import ChatPrompt
from crossknow.generation.cached_calls import request_identity, result_from_dict, result_to_dict
from crossknow.generation.pricing import ModelPrice, PriceTable
from crossknow.generation.structured import RETRY_NOTE, StructuredClient, parse_structured
from crossknow.models.generator import (
    AnswerContinuation,
    ChatMessage,
    GenerateRequest,
    GenerateResult,
    GenerationFailed,
    TokenAlternatives,
    Usage,
)
from crossknow.store.request_cache import RequestCache, cache_key


class Fact(BaseModel):
    model_config = ConfigDict(extra="forbid")
    factuality: Literal["yes", "no"]
    reason: str


Answer = Callable[[str, int], "str | GenerateResult | None"]
"""(user message, attempt) -> text, a full result, or None for a transport failure."""


class ScriptedGenerator:
    """A Generator whose answers come from a function of the prompt and the attempt (seed)."""

    name = "scripted"
    model_id = "m-1"

    def __init__(self, answer: Answer, base_seed: int = 0):
        self.answer = answer
        self.base_seed = base_seed
        self.batches: list[list[GenerateRequest]] = []

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        self.batches.append(list(requests))
        results: list[GenerateResult | None] = []
        failures = {}
        for i, request in enumerate(requests):
            user = request.messages[-1].content.split("\n\nReturn only")[0]
            out = self.answer(user, (request.seed or 0) - self.base_seed)
            if out is None:
                failures[i] = "openai: failed 6 times; last problem: ReadTimeout"
                results.append(None)
            elif isinstance(out, GenerateResult):
                results.append(out)
            else:
                results.append(GenerateResult(out, self.name, self.model_id, Usage(10, 5), None, "stop"))
        if failures:
            raise GenerationFailed(results, failures)
        return results  # type: ignore[return-value]


GOOD = '{"factuality": "yes", "reason": "a fact"}'
PRICES = PriceTable({"m-1": ModelPrice(prompt=1.0, completion=2.0)})
CALL_COST = (10 * 1.0 + 5 * 2.0) / 1e6


def test_only_malformed_outputs_are_retried_then_recorded_invalid():
    script = {
        "valid": [GOOD],
        "fixed on retry": ["Sure! Here it is: {factuality: yes}", "```json\n" + GOOD + "\n```"],
        "never": ["nope", '{"factuality": "maybe", "reason": "x"}', '{"factuality": "yes"}'],
    }
    generator = ScriptedGenerator(lambda user, attempt: script[user][attempt], base_seed=7)
    client = StructuredClient(generator, prices=PRICES, seed=7)
    prompts = [ChatPrompt("Judge facts.", user) for user in script]
    outcomes = client.call_many(prompts, Fact)

    assert [len(batch) for batch in generator.batches] == [3, 2, 1]  # one generate call per attempt
    assert [{r.seed for r in batch} for batch in generator.batches] == [{7}, {8}, {9}]
    first, retry = generator.batches[0][0], generator.batches[1][0]
    assert first.messages[0].role == "system" and first.messages[-1].content == "valid"
    assert first.json_schema == Fact.model_json_schema() and first.top_logprobs == 0
    compact_schema = json.dumps(Fact.model_json_schema(), separators=(",", ":"))
    assert retry.messages[-1].content == "fixed on retry" + RETRY_NOTE.format(schema=compact_schema)

    valid, fixed, never = outcomes
    assert valid.value == Fact(factuality="yes", reason="a fact") and valid.error is None and valid.attempts == 1
    assert fixed.value is not None and fixed.attempts == 2 and fixed.raw_text.startswith("```json")
    assert never.value is None and never.attempts == 3 and not never.valid
    assert never.raw_text == '{"factuality": "yes"}'
    assert never.error == "field 'reason': Field required"
    assert never.usage == Usage(30, 15) and never.cost_usd == pytest.approx(3 * CALL_COST)
    assert client.meter.calls == 6 and client.meter.cached_calls == 0
    assert (client.meter.prompt_tokens, client.meter.completion_tokens) == (60, 30)
    assert client.meter.cost_usd == pytest.approx(6 * CALL_COST)
    assert all(o.yes_probability is None and not o.cached for o in outcomes)


def test_transport_failures_are_recorded_not_cached_and_retried_on_the_next_run(tmp_path):
    down = {"flaky": True}

    def answer(user: str, attempt: int) -> str | None:
        return None if user == "flaky" and down["flaky"] else GOOD

    cache = RequestCache(tmp_path / "cache.sqlite")
    generator = ScriptedGenerator(answer)
    outcomes = StructuredClient(generator, cache).call_many([ChatPrompt(None, "ok"), ChatPrompt(None, "flaky")], Fact)
    assert outcomes[0].valid
    failed = outcomes[1]
    assert failed.value is None and failed.attempts == 1 and failed.raw_text == ""
    assert failed.error.startswith("request failed: openai: failed 6 times")
    assert len(generator.batches) == 1  # a transport failure is not retried as malformed output
    assert len(cache) == 1

    down["flaky"] = False
    again = ScriptedGenerator(answer)
    client = StructuredClient(again, cache)
    outcomes = client.call_many([ChatPrompt(None, "ok"), ChatPrompt(None, "flaky")], Fact)
    assert [len(b) for b in again.batches] == [1]  # only the failed prompt is asked again
    assert outcomes[0].cached and not outcomes[1].cached and outcomes[1].valid
    assert (client.meter.calls, client.meter.cached_calls) == (1, 1)


def test_rerun_from_the_cache_costs_nothing_and_replays_retries(tmp_path):
    script = {"a": [GOOD], "b": ["{broken", GOOD]}
    cache = RequestCache(tmp_path / "cache.sqlite")
    first = StructuredClient(ScriptedGenerator(lambda u, k: script[u][k]), cache, prices=PRICES)
    before = first.call_many([ChatPrompt("s", "a"), ChatPrompt("s", "b")], Fact)

    replay = ScriptedGenerator(lambda u, k: pytest.fail("the cache should answer"))
    client = StructuredClient(replay, cache, prices=PRICES)
    after = client.call_many([ChatPrompt("s", "a"), ChatPrompt("s", "b")], Fact)
    assert replay.batches == []
    assert [o.attempts for o in after] == [1, 2] and all(o.cached for o in after)
    assert [o.value for o in after] == [o.value for o in before]
    assert [o.cost_usd for o in after] == [o.cost_usd for o in before] == pytest.approx([CALL_COST, 2 * CALL_COST])
    assert (client.meter.calls, client.meter.cached_calls, client.meter.cost_usd) == (0, 3, 0.0)
    assert cache.hits == 3

    other_seed = StructuredClient(ScriptedGenerator(lambda u, k: GOOD), cache, seed=1)
    assert not other_seed.call_many([ChatPrompt("s", "a")], Fact)[0].cached  # seed is part of the key


def test_confidence_from_logprobs_or_from_the_answer():
    pieces = ['{"factuality": "', "no", '", "reason": "r"}']
    top = (("no", math.log(0.6)), ("yes", math.log(0.3)))
    logprobs = tuple(TokenAlternatives(p, top[0][1] if p == "no" else -0.01, top if p == "no" else ()) for p in pieces)
    with_logprobs = GenerateResult("".join(pieces), "scripted", "m-1", Usage(1, 1), logprobs, "stop")
    generator = ScriptedGenerator(lambda user, attempt: with_logprobs if user == "lp" else GOOD)
    client = StructuredClient(generator)
    outcomes = client.call_many([ChatPrompt(None, "lp"), ChatPrompt(None, "plain")], Fact,
                                confidence_field="factuality", top_logprobs=3)
    assert generator.batches[0][0].top_logprobs == 3
    assert outcomes[0].yes_probability == pytest.approx(1 / 3)
    assert outcomes[1].yes_probability == 1.0  # no logprobs: from the parsed "yes"
    with pytest.raises(CrossknowError, match="'certainty' is not a field of Fact"):
        client.call_many([ChatPrompt(None, "x")], Fact, confidence_field="certainty")


def test_identical_prompts_are_sent_once():
    generator = ScriptedGenerator(lambda user, attempt: GOOD)
    client = StructuredClient(generator)
    outcomes = client.call_many([ChatPrompt("s", "same"), ChatPrompt("s", "other"), ChatPrompt("s", "same")], Fact)
    assert [r.messages[-1].content for r in generator.batches[0]] == ["same", "other"]
    assert all(o.valid and o.attempts == 1 for o in outcomes) and client.meter.calls == 2


def test_output_cut_at_max_tokens_says_so():
    cut = GenerateResult('{"factuality": "yes", "rea', "scripted", "m-1", Usage(3, 8), None, "length")
    client = StructuredClient(ScriptedGenerator(lambda u, k: cut), max_attempts=1, max_tokens=8)
    outcome = client.call_many([ChatPrompt(None, "x")], Fact)[0]
    assert outcome.error.startswith("not valid JSON") and "stopped at max_tokens=8" in outcome.error


def test_bad_settings_and_a_lying_backend():
    with pytest.raises(CrossknowError, match="max_attempts"):
        StructuredClient(ScriptedGenerator(lambda u, k: GOOD), max_attempts=0)

    class Short(ScriptedGenerator):
        def generate(self, requests):
            return []

    with pytest.raises(CrossknowError, match="returned 0 results for 1 requests"):
        StructuredClient(Short(lambda u, k: GOOD)).call_many([ChatPrompt(None, "x")], Fact)
    assert StructuredClient(Short(lambda u, k: GOOD)).call_many([], Fact) == []


def test_parse_structured():
    assert parse_structured(" \n" + GOOD + "\n", Fact)[0] is not None
    assert parse_structured("```\n" + GOOD + "```", Fact)[0] is not None
    assert parse_structured("Answer: " + GOOD + " Hope that helps.", Fact)[0] is not None
    assert parse_structured("", Fact) == (None, "empty output")
    value, error = parse_structured('{"factuality": "yes", "reason": "r", "extra": 1}', Fact)
    assert value is None and error == "field 'extra': Extra inputs are not permitted"
    assert parse_structured("{'factuality': 'yes'}", Fact)[1].startswith("not valid JSON")


def _local(name: str, model_id: str) -> SimpleNamespace:
    """A local generator's identity: a name and a model id, no server."""
    return SimpleNamespace(name=name, model_id=model_id)


def test_cache_identity_covers_the_request():
    base = GenerateRequest(messages=(ChatMessage("user", "Hi"),), max_tokens=5, temperature=0.0, seed=0,
                           json_schema={"a": 1}, top_logprobs=0)
    key = cache_key(request_identity(_local("openai", "m"), base))
    changed = [
        request_identity(_local("hf", "m"), base),
        request_identity(_local("openai", "m2"), base),
        *(
            request_identity(_local("openai", "m"), GenerateRequest(**{**base.__dict__, field: value}))
            for field, value in [("max_tokens", 6), ("temperature", 0.5), ("seed", 1), ("json_schema", {"a": 2}),
                                 ("top_logprobs", 5)]
        ),
        # the same text as a completion prompt is another request
        request_identity(_local("openai", "m"), GenerateRequest(**{**base.__dict__, "messages": (), "prompt": "Hi"})),
    ]
    assert len({key, *(cache_key(identity) for identity in changed)}) == 1 + len(changed)
    result = GenerateResult("t", "openai", "m", Usage(1, 2), (TokenAlternatives("t", -0.5, (("t", -0.5),)),), "stop")
    assert result_from_dict(json.loads(json.dumps(result_to_dict(result)))) == result
    assert result_from_dict({"unexpected": True}) is None


def test_stop_strings_enter_the_cache_key_only_when_given():
    messages = (ChatMessage("user", "Hi"),)
    plain = request_identity(_local("b", "m"), GenerateRequest(messages=messages))
    assert "stop" not in plain  # keys of requests without stop strings are unchanged
    stopped = request_identity(_local("b", "m"), GenerateRequest(messages=messages, stop=("\n",)))
    assert stopped == plain | {"stop": ["\n"]} and cache_key(stopped) != cache_key(plain)


class ScoringGenerator(ScriptedGenerator):
    """A ScriptedGenerator that also scores answer continuations, by a fixed table of values."""

    def __init__(self, answer: Answer, logprobs: dict[str, float]):
        super().__init__(answer)
        self.logprobs = logprobs
        self.scored: list[AnswerContinuation] = []

    def score_answers(self, requests: Sequence[AnswerContinuation]) -> list[float]:
        self.scored.extend(requests)
        return [self.logprobs[r.continuation] for r in requests]


def test_confidence_from_a_scoring_backend_is_exact_batched_cached_and_falls_back(tmp_path):
    answers = {"a": GOOD, "b": '```json\n{"reason": "r", "factuality": "no"}\n```', "c": "junk"}
    generator = ScoringGenerator(lambda user, attempt: answers[user], {'"yes"': math.log(0.6), '"no"': math.log(0.2)})
    client = StructuredClient(generator, RequestCache(tmp_path / "c.sqlite"), max_attempts=1)
    prompts = [ChatPrompt("S", user) for user in "abc"]
    a, b, c = client.call_many(prompts, Fact, confidence_field="factuality")
    assert generator.batches[0][0].top_logprobs == 0  # nothing asked of the generator's top-k
    assert a.yes_probability == pytest.approx(0.75) and b.yes_probability == pytest.approx(0.75)
    assert c.yes_probability is None and not c.valid
    assert [(r.answer_prefix, r.continuation) for r in generator.scored] == [
        ('{"factuality": ', '"yes"'), ('{"factuality": ', '"no"'),
        ('```json\n{"reason": "r", "factuality": ', '"yes"'), ('```json\n{"reason": "r", "factuality": ', '"no"'),
    ]
    assert generator.scored[0].messages == (ChatMessage("system", "S"), ChatMessage("user", "a"))
    # a second client on the same cache scores nothing again
    again = StructuredClient(generator, RequestCache(tmp_path / "c.sqlite"), max_attempts=1)
    assert [o.yes_probability for o in again.call_many(prompts[:2], Fact, confidence_field="factuality")] == [
        a.yes_probability, b.yes_probability
    ]
    assert len(generator.scored) == 4
    # an answer whose field name is not written plainly falls back to 1.0/0.0 from the parsed answer
    odd = ScoringGenerator(lambda user, attempt: '{"\\u0066actuality": "yes", "reason": "x"}', {})
    client = StructuredClient(odd, max_attempts=1)
    [outcome] = client.call_many([ChatPrompt(None, "q")], Fact, confidence_field="factuality")
    assert outcome.valid and outcome.yes_probability == 1.0 and odd.scored == []


class KilledBeforeCaching(RequestCache):
    """A request cache whose writer dies (a kill -9) when it stores answers."""

    def put_many(self, entries):
        raise KeyboardInterrupt("killed")


def test_the_spend_ledger_counts_a_request_once_over_a_kill_and_a_replay(tmp_path):
    from crossknow.store.spend_ledger import SpendLedger, SpendTotal

    down = {"flaky": True}

    def answer(user: str, attempt: int) -> str | None:
        return None if user == "flaky" and down["flaky"] else GOOD

    prompts = [ChatPrompt(None, "a"), ChatPrompt(None, "b"), ChatPrompt(None, "flaky")]
    paid = SpendTotal(calls=3, prompt_tokens=20, completion_tokens=10, cost_usd=2 * CALL_COST)  # a, b, the failure
    # killed after the ledger recorded a and b, before their answers reached the cache
    killed = StructuredClient(ScriptedGenerator(answer), KilledBeforeCaching(tmp_path / "cache.sqlite"), prices=PRICES)
    killed.record_spend(SpendLedger(tmp_path / "run"), "writer")
    with pytest.raises(KeyboardInterrupt):
        killed.call_many(prompts, Fact)
    assert SpendLedger(tmp_path / "run").total() == paid
    # the next invocation sends a and b again (not cached) and the flaky one, which answers now
    down["flaky"] = False
    ledger = SpendLedger(tmp_path / "run")
    client = StructuredClient(ScriptedGenerator(answer), RequestCache(tmp_path / "cache.sqlite"), prices=PRICES)
    client.record_spend(ledger, "writer")
    assert all(o.valid for o in client.call_many(prompts, Fact))
    assert client.meter.calls == 3 and ledger.sent() == SpendTotal(3, 30, 15, 3 * CALL_COST)
    # a and b count once; the failed request counts (it was sent, and nothing could replay it)
    whole = SpendTotal(4, 30, 15, 3 * CALL_COST)
    assert ledger.total() == whole
    # a third invocation replays everything from the cache: it sends nothing, and the whole run is unchanged
    replay = StructuredClient(ScriptedGenerator(lambda u, k: pytest.fail("the cache answers")),
                              RequestCache(tmp_path / "cache.sqlite"), prices=PRICES)
    third = SpendLedger(tmp_path / "run")
    replay.record_spend(third, "writer")
    replay.call_many(prompts, Fact)
    assert third.sent() == SpendTotal() and third.total() == whole and replay.meter.cached_calls == 3
    # without a cache, nothing replays a request: each one sent counts
    uncached = StructuredClient(ScriptedGenerator(answer), None, prices=PRICES)
    uncached.record_spend(SpendLedger(tmp_path / "uncached"))
    uncached.call_many(prompts[:1], Fact)
    uncached.call_many(prompts[:1], Fact)
    assert SpendLedger(tmp_path / "uncached").total().calls == 2
