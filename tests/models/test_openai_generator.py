"""The openai: generator: request bodies, response parsing, JSON-mode fallback, per-request failures,
retries and key redaction, against a real llama-cpp-python chat server and the fault proxy.

llama-cpp-python generates slowly here (about 0.3 s per token, more under load, and a second or so
per token when log-probabilities are asked for), so the server tests make few, short requests.
"""

from __future__ import annotations

import logging
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict

from crossknow.errors import CrossknowError, ModelSpecError
from crossknow.models.generator import (
    ChatMessage,
    GenerateRequest,
    GenerationFailed,
    Generator,
    TokenAlternatives,
    Usage,
)
from crossknow.models.openai_generator import OpenAIGenerator
from crossknow.models.registry import ModelOptions, load_generator

from ..fault_proxy import FaultProxy

MODEL = "gemma-3-270m"


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid", title="Fact verdict!")
    factuality: Literal["yes", "no"]


SCHEMA = Verdict.model_json_schema()


def ask(text: str, system: str | None = None, **settings) -> GenerateRequest:
    messages = ((ChatMessage("system", system),) if system else ()) + (ChatMessage("user", text),)
    return GenerateRequest(messages=messages, **settings)


def chat_body(content: str, logprobs: list | None = None) -> dict:
    """A /v1/chat/completions answer in OpenAI's shape."""
    choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
    if logprobs is not None:
        choice["logprobs"] = {"content": logprobs}
    return {"choices": [choice], "usage": {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16}}


# ---- without a server ------------------------------------------------------------------------


def test_request_bodies_by_json_mode():
    request = ask("Is it?", system="Judge.", max_tokens=9, temperature=0.7, seed=3, json_schema=SCHEMA, top_logprobs=4)
    generator = OpenAIGenerator(MODEL, "http://127.0.0.1:9/v1")
    assert isinstance(generator, Generator) and generator.json_mode == "auto"
    body = generator.payload(request)
    assert body["messages"] == [{"role": "system", "content": "Judge."}, {"role": "user", "content": "Is it?"}]
    assert (body["max_tokens"], body["temperature"], body["seed"]) == (9, 0.7, 3)
    assert (body["logprobs"], body["top_logprobs"]) == (True, 4)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Fact_verdict", "schema": SCHEMA, "strict": False},
    }
    assert generator.payload(request, "json_object")["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert "response_format" not in generator.payload(request, "none")
    plain = generator.payload(ask("Hi"))
    assert not {"seed", "logprobs", "top_logprobs", "response_format", "stop"} & set(plain)
    stopped = generator.payload(GenerateRequest(messages=(ChatMessage("user", "Hi"),), stop=("\n", "Q:")))
    assert stopped["stop"] == ["\n", "Q:"]

    folded = OpenAIGenerator(MODEL, "http://127.0.0.1:9/v1", fold_system=True, strict_schema=True)
    body = folded.payload(request)
    assert body["messages"] == [{"role": "user", "content": "Judge.\n\nIs it?"}]
    assert body["response_format"]["json_schema"]["strict"] is True
    only_system = folded.payload(GenerateRequest(messages=(ChatMessage("system", "S"),)))
    assert only_system["messages"] == [{"role": "user", "content": "S"}]
    with pytest.raises(CrossknowError, match="json_mode must be one of"):
        OpenAIGenerator(MODEL, "http://127.0.0.1:9/v1", json_mode="grammar")


def test_parses_openai_shaped_logprobs():
    content = [
        {"token": "yes", "logprob": -0.5, "top_logprobs": [{"token": "no", "logprob": -1.5},
                                                           {"token": "yes", "logprob": -0.5}]},
    ]
    generator = OpenAIGenerator(MODEL, "http://127.0.0.1:9/v1")
    result = generator._parse(chat_body("yes", content), ask("q", top_logprobs=2))
    assert result.text == "yes" and result.usage == Usage(12, 4) and result.finish_reason == "stop"
    assert result.logprobs == (TokenAlternatives("yes", -0.5, (("yes", -0.5), ("no", -1.5))),)
    assert generator._parse(chat_body("yes", content), ask("q")).logprobs is None  # not asked
    with pytest.raises(CrossknowError, match="without choices"):
        generator._parse({"error": "?"}, ask("q"))


def test_refusals_of_one_request_do_not_stop_the_others():
    too_long = ("status", 400, {"error": {"message": "maximum context length is 2048 tokens"}})
    answer = ("status", 200, chat_body('{"factuality": "no"}'))
    with FaultProxy(upstream_port=9, script=[too_long, answer]) as proxy:
        generator = OpenAIGenerator(MODEL, proxy.base_url, concurrency=1, json_mode="json_object")
        with pytest.raises(GenerationFailed) as failed:
            generator.generate([ask("long " * 3000, json_schema=SCHEMA), ask("short", json_schema=SCHEMA)])
    assert failed.value.results[0] is None and failed.value.results[1].text == '{"factuality": "no"}'
    assert list(failed.value.failures) == [0] and "HTTP 400: maximum context length" in failed.value.failures[0]
    assert isinstance(failed.value, CrossknowError) and "1 of 2 generation requests failed" in str(failed.value)
    assert len(proxy.seen) == 2  # nothing retried


def test_timeouts_are_retried_then_reported_per_request():
    with FaultProxy(upstream_port=9, script=["hang"] * 3, hang_s=2.0) as proxy:
        generator = OpenAIGenerator(MODEL, proxy.base_url, timeout_s=0.3, max_retries=2, backoff_base_s=0.01)
        with pytest.raises(GenerationFailed, match=r"failed 3 times.*ReadTimeout") as failed:
            generator.generate([ask("a")])
    assert failed.value.results == [None] and len(proxy.seen) == 3


def test_api_key_is_sent_but_never_shown(monkeypatch, caplog):
    key = "sk-test-Gen42SECRETvalue"
    monkeypatch.setenv("CROSSKNOW_TEST_KEY", key)
    reflect_401 = ("status", 401, {"error": {"message": "Incorrect API key provided: {auth}"}})
    reflect_503 = ("status", 503, {"error": {"message": "upstream refused {auth}"}})
    with caplog.at_level(logging.DEBUG):
        with FaultProxy(upstream_port=9, script=[reflect_401]) as proxy:
            generator = OpenAIGenerator(
                MODEL, proxy.base_url, api_key_env="CROSSKNOW_TEST_KEY", max_retries=2, backoff_base_s=0.01
            )
            with pytest.raises(CrossknowError) as refused:  # a wrong key concerns every request: at once
                generator.generate([ask("a")])
            assert not isinstance(refused.value, GenerationFailed)
            proxy.set_script([reflect_503] * 3)
            with pytest.raises(GenerationFailed) as gave_up:
                generator.generate([ask("a")])
    assert proxy.seen[0]["headers"]["authorization"] == f"Bearer {key}"
    assert len(proxy.seen) == 4
    for error in (refused.value, gave_up.value):
        assert key not in str(error) and key not in repr(error) and "***" in str(error)
    assert key not in gave_up.value.failures[0]
    assert "HTTP 401" in str(refused.value)
    assert key not in caplog.text and "upstream refused" in caplog.text
    assert key not in repr(generator) and "(set)" in repr(generator)


def test_registry_builds_generators(tmp_path):
    generator = load_generator(
        "openai:gpt-4.1-mini",
        ModelOptions(base_url="http://127.0.0.1:9/v1", concurrency=3, json_mode="json_object", fold_system=True),
    )
    assert isinstance(generator, OpenAIGenerator)
    assert (generator.name, generator.model_id, generator.json_mode, generator.fold_system) == (
        "openai", "gpt-4.1-mini", "json_object", True
    )
    with pytest.raises(CrossknowError, match="needs a server: .* or pass --base-url URL"):
        load_generator("openai:gpt-4.1")
    with pytest.raises(ModelSpecError, match="unknown generator spec 'gpt-4.1'"):
        load_generator("gpt-4.1")
    with pytest.raises(CrossknowError, match="without config.json"):
        load_generator(f"hf:{tmp_path}")


# ---- against the real llama.cpp chat server --------------------------------------------------


@pytest.mark.slow
def test_auto_mode_falls_back_to_json_object_and_output_validates(llama_chat_server_process):
    request = ask("Is Paris the capital of France? Answer in JSON.", max_tokens=24, json_schema=SCHEMA, seed=0)
    too_long = ask("word " * 2100, max_tokens=5, json_schema=SCHEMA)
    with FaultProxy(llama_chat_server_process.port) as proxy:
        generator = OpenAIGenerator(MODEL, proxy.base_url, concurrency=1)
        with pytest.raises(GenerationFailed) as failed:
            generator.generate([request, too_long])
    result = failed.value.results[0]
    print(result)
    assert generator.json_mode == "json_object"
    bodies = [seen["action"] for seen in proxy.seen]
    assert bodies == ["pass"] * 3  # json_schema refused once, then json_object for both
    assert Verdict.model_validate_json(result.text)  # llama.cpp's grammar kept the output to the schema
    assert result.usage.prompt_tokens > 5 and result.usage.completion_tokens > 3
    assert (result.backend, result.model_id, result.finish_reason, result.logprobs) == ("openai", MODEL, "stop", None)
    assert "maximum context length is 2048" in failed.value.failures[1]
