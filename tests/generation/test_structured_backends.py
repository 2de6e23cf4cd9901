"""StructuredClient on real backends: the llama.cpp chat server (through the fault proxy, which also
counts the requests that reach the server) and the embedded model (JSON constrained to the schema,
P(yes) exact from two scored values).

Requests with log-probabilities cost llama-cpp-python about a second per generated token here, so
the server test makes exactly one real generation and proves everything else on it.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict

from crossknow.generation.ask import ChatPrompt
from crossknow.generation.confidence import scored_yes_probability
from crossknow.generation.structured import StructuredClient
from crossknow.models.generator import ChatMessage
from crossknow.models.openai_generator import OpenAIGenerator
from crossknow.models.protocol import ScoreRequest
from crossknow.store.request_cache import RequestCache

from ..fault_proxy import FaultProxy

MODEL = "gemma-3-270m"
PROMPT = ChatPrompt(
    system="You check facts. Answer in JSON.",
    user='Sentence: "Insulin lowers blood sugar." Is this sentence a biomedical fact? Answer yes or no.',
)


class Factuality(BaseModel):
    model_config = ConfigDict(extra="forbid")
    factuality: Literal["yes", "no"]


@pytest.mark.slow
def test_llama_json_confidence_retries_and_cache(llama_chat_server_process, tmp_path):
    faults = ["429", "500", "drop", "truncate"]
    cache = RequestCache(tmp_path / "requests.sqlite")
    with FaultProxy(llama_chat_server_process.port, faults) as proxy:
        generator = OpenAIGenerator(
            MODEL, proxy.base_url, concurrency=1, max_retries=5, backoff_base_s=0.01,
            json_mode="json_object", fold_system=True,
        )
        client = StructuredClient(generator, cache, max_tokens=24)
        [outcome] = client.call_many([PROMPT], Factuality, confidence_field="factuality", top_logprobs=5)
        print(outcome)
        assert [seen["action"] for seen in proxy.seen] == faults + ["pass"]  # every fault met, then served

        assert outcome.valid and outcome.error is None and outcome.attempts == 1 and not outcome.cached
        assert outcome.value.factuality in ("yes", "no")
        assert Factuality.model_validate_json(outcome.raw_text) == outcome.value
        assert 0.0 <= outcome.yes_probability <= 1.0
        assert outcome.usage.prompt_tokens > 20 and outcome.usage.completion_tokens >= 5
        assert outcome.cost_usd == 0.0  # a local model: no price, counted as 0
        meter = client.meter
        assert (meter.calls, meter.cached_calls) == (1, 0)
        assert (meter.prompt_tokens, meter.completion_tokens) == (outcome.usage.prompt_tokens,
                                                                  outcome.usage.completion_tokens)
        [(stored,)] = sqlite3.connect(tmp_path / "requests.sqlite").execute("SELECT value FROM entries").fetchall()
        assert len(json.loads(stored)["logprobs"][0]["top"]) >= 5  # top_logprobs were asked and kept

        # The same run again, in a new client on the same cache file: nothing reaches the server.
        again = StructuredClient(generator, RequestCache(tmp_path / "requests.sqlite"), max_tokens=24)
        [replayed] = again.call_many([PROMPT], Factuality, confidence_field="factuality", top_logprobs=5)
        assert len(proxy.seen) == len(faults) + 1
    assert replayed.cached and replayed.value == outcome.value
    assert replayed.yes_probability == outcome.yes_probability and replayed.usage == outcome.usage
    assert (again.meter.calls, again.meter.cached_calls, again.meter.cost_usd) == (0, 1, 0.0)


def test_transport_failures_end_as_recorded_invalid(tmp_path):
    cache = RequestCache(tmp_path / "requests.sqlite")
    with FaultProxy(upstream_port=9, script=["hang", "503", "drop"], hang_s=2.0) as proxy:
        generator = OpenAIGenerator(MODEL, proxy.base_url, timeout_s=0.3, max_retries=2, backoff_base_s=0.01)
        client = StructuredClient(generator, cache, max_attempts=3)
        [outcome] = client.call_many([PROMPT], Factuality, confidence_field="factuality")
    assert outcome.value is None and outcome.yes_probability is None and outcome.attempts == 1
    assert outcome.error.startswith("request failed: openai:") and "failed 3 times" in outcome.error
    assert len(proxy.seen) == 3 and len(cache) == 0  # nothing cached: a re-run tries again
    assert (client.meter.calls, client.meter.prompt_tokens) == (1, 0)


@pytest.mark.slow
def test_embedded_model_output_is_validated_and_recorded(embedded_generator):
    client = StructuredClient(embedded_generator, max_attempts=2, max_tokens=3)
    [outcome] = client.call_many([PROMPT], Factuality, confidence_field="factuality")
    print(outcome)
    # The base model does not write this JSON in three tokens: the answer is recorded as invalid.
    assert outcome.value is None and outcome.attempts == 2 and outcome.yes_probability is None
    assert "stopped at max_tokens=3" in outcome.error and outcome.raw_text
    assert outcome.usage.completion_tokens == 6 and outcome.cost_usd == 0.0
    assert client.meter.calls == 2


@pytest.mark.slow
def test_embedded_model_writes_schema_json_with_an_exact_confidence(embedded_generator, embedded_scorer, tmp_path):
    cache = RequestCache(tmp_path / "requests.sqlite")
    client = StructuredClient(embedded_generator, cache, max_tokens=24)
    [outcome] = client.call_many([PROMPT], Factuality, confidence_field="factuality")
    print(outcome)
    # decoding constrained to the schema: valid at the first attempt, ended at the closing brace
    assert outcome.valid and outcome.attempts == 1 and outcome.error is None
    assert outcome.raw_text == f'{{"factuality": "{outcome.value.factuality}"}}'
    # P(yes) is exact: the two values scored by the engine after the answer's own prefix
    messages = (ChatMessage("system", PROMPT.system), ChatMessage("user", PROMPT.user))
    context = embedded_generator.prompt_text(messages) + '{"factuality": '
    yes, no = embedded_scorer.score([ScoreRequest(context, '"yes"'), ScoreRequest(context, '"no"')])
    assert outcome.yes_probability == pytest.approx(scored_yes_probability(yes.logprob_sum, no.logprob_sum), abs=1e-5)
    assert 0.0 < outcome.yes_probability < 1.0  # a probability, not 1/0 read off the answer
    [(stored,)] = sqlite3.connect(tmp_path / "requests.sqlite").execute(
        "SELECT value FROM entries WHERE value LIKE '%\"text\"%'"
    ).fetchall()
    assert json.loads(stored)["logprobs"] is None  # no top log-probabilities were asked for
    assert len(cache) == 3  # the generation and the two scored values

    def no_scoring(requests):
        raise AssertionError("a cached confidence was scored again")

    again = StructuredClient(embedded_generator, RequestCache(tmp_path / "requests.sqlite"), max_tokens=24)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(embedded_generator, "score_answers", no_scoring)
        [replayed] = again.call_many([PROMPT], Factuality, confidence_field="factuality")
    assert replayed.cached and replayed.yes_probability == outcome.yes_probability
