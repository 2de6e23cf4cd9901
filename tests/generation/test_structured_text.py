"""StructuredClient asked for free text (TextOutput): the same retries, cache, seeds and meter as JSON,
with a caller's parser deciding validity (pure logic with a scripted generator; the real llama.cpp
server answers free text in tests/eclektic)."""

from __future__ import annotations

import pytest

from crossknow.errors import CrossknowError
from crossknow.generation.ask import ChatPrompt, TextOutput
from crossknow.generation.structured import StructuredClient
from crossknow.models.generator import Usage
from crossknow.store.request_cache import RequestCache

from .test_structured import CALL_COST, PRICES, ScriptedGenerator


def digits(text: str) -> tuple[int | None, str | None]:
    """A parser for the tests: the output must be a whole number."""
    stripped = text.strip()
    return (int(stripped), None) if stripped.isdigit() else (None, f"not a number: {stripped!r}")


def test_free_text_is_asked_without_a_schema_parsed_retried_and_recorded_invalid():
    script = {"two": ["2"], "three": ["three", "3"], "never": ["", "x", "y"]}
    generator = ScriptedGenerator(lambda user, attempt: script[user][attempt], base_seed=5)
    client = StructuredClient(generator, prices=PRICES, seed=5)
    outcomes = client.call_many([ChatPrompt(None, user) for user in script], TextOutput(digits))

    assert [len(batch) for batch in generator.batches] == [3, 2, 1]
    assert all(r.json_schema is None and r.top_logprobs == 0 for batch in generator.batches for r in batch)
    assert [{r.seed for r in batch} for batch in generator.batches] == [{5}, {6}, {7}]
    # no retry note by default: the retried prompt is the first one, only the seed moves
    assert generator.batches[1][0].messages == generator.batches[0][1].messages
    two, three, never = outcomes
    assert (two.value, two.attempts, two.error) == (2, 1, None)
    assert (three.value, three.attempts, three.raw_text) == (3, 2, "3")
    assert never.value is None and not never.valid and never.attempts == 3
    assert never.error == "not a number: 'y'" and never.raw_text == "y"
    assert never.usage == Usage(30, 15) and never.cost_usd == pytest.approx(3 * CALL_COST)
    assert (client.meter.calls, client.meter.cached_calls) == (6, 0)
    assert client.meter.cost_usd == pytest.approx(6 * CALL_COST)


def test_a_retry_note_is_added_from_the_second_attempt_only():
    generator = ScriptedGenerator(lambda user, attempt: ["no", "4"][attempt])
    client = StructuredClient(generator)
    [outcome] = client.call_many([ChatPrompt("sys", "How many?")], TextOutput(digits, retry_note="\nDigits only."))
    assert [b[0].messages[-1].content for b in generator.batches] == ["How many?", "How many?\nDigits only."]
    assert generator.batches[0][0].messages[0].content == "sys" and outcome.value == 4


def test_per_prompt_seeds_and_a_rerun_from_the_cache(tmp_path):
    cache = RequestCache(tmp_path / "cache.sqlite")

    def answer(user: str, attempt: int) -> str:
        return "x" if attempt in (10, 20) else "1"  # the first attempt of each seeded prompt is invalid

    generator = ScriptedGenerator(answer)
    client = StructuredClient(generator, cache, prices=PRICES)
    prompts = [ChatPrompt(None, "q"), ChatPrompt(None, "q")]  # one prompt, two samples
    first = client.call_many(prompts, TextOutput(digits), seeds=[10, 20])
    assert [[r.seed for r in b] for b in generator.batches] == [[10, 20], [11, 21]]
    assert [o.attempts for o in first] == [2, 2] and all(o.value == 1 for o in first)

    replay = ScriptedGenerator(lambda u, k: pytest.fail("the cache should answer"))
    again = StructuredClient(replay, RequestCache(tmp_path / "cache.sqlite"), prices=PRICES)
    second = again.call_many(prompts, TextOutput(digits), seeds=[10, 20])
    assert replay.batches == [] and all(o.cached and o.attempts == 2 for o in second)
    assert [o.cost_usd for o in second] == pytest.approx([2 * CALL_COST] * 2)
    assert (again.meter.calls, again.meter.cached_calls, again.meter.cost_usd) == (0, 4, 0.0)


def test_text_output_refuses_a_confidence_field_and_seeds_must_match_prompts():
    client = StructuredClient(ScriptedGenerator(lambda u, k: "1"))
    with pytest.raises(CrossknowError, match="confidence field needs a JSON schema"):
        client.call_many([ChatPrompt(None, "q")], TextOutput(digits), confidence_field="x")
    with pytest.raises(CrossknowError, match="1 seeds for 2 prompts"):
        client.call_many([ChatPrompt(None, "q"), ChatPrompt(None, "r")], TextOutput(digits), seeds=[0])
