"""The request cache's key (backend, server, model, request) and the per-server `fold_system` decision:
scripted servers (the fault proxy answering with fixed bodies) for the logic, the real llama.cpp
servers of the session for what a real server does."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict

from crossknow.adaxeval.clients import Clients
from crossknow.adaxeval.records import GenerateConfig
from crossknow.generation.ask import ChatPrompt
from crossknow.generation.cached_calls import request_identity
from crossknow.generation.structured import StructuredClient
from crossknow.models.generator import ChatMessage, GenerateRequest, GenerationFailed
from crossknow.models.openai_generator import OpenAIGenerator
from crossknow.models.registry import ModelOptions, load_generator
from crossknow.store.request_cache import RequestCache, cache_key

from ..fault_proxy import FaultProxy

MODEL = "gemma-3-270m"
REQUEST = GenerateRequest(messages=(ChatMessage("system", "S"), ChatMessage("user", "Hi")), max_tokens=4)
MODELS_OF = {
    owner: {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": owner}]}
    for owner in ("vllm", "me")
}
"""/v1/models as vLLM and llama-cpp-python (owned_by "me") answer it."""
CHAT = {
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1},
}


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    factuality: Literal["yes", "no"]


def _key(generator) -> str:
    return cache_key(request_identity(generator, REQUEST))


def test_one_model_name_on_two_servers_has_two_keys():
    first = OpenAIGenerator(MODEL, "http://127.0.0.1:8001/v1")
    second = OpenAIGenerator(MODEL, "http://127.0.0.1:8002/v1")
    assert _key(first) != _key(second)
    assert _key(first) == _key(OpenAIGenerator(MODEL, "http://127.0.0.1:8001/v1/"))  # one server, written twice
    assert request_identity(first, REQUEST)["server"] == {
        "base_url": "http://127.0.0.1:8001/v1", "json_mode": "auto", "fold_system": False,
    }
    # a setting that changes what the server receives changes the key
    assert _key(first) != _key(OpenAIGenerator(MODEL, "http://127.0.0.1:8001/v1", fold_system="auto"))
    assert _key(first) != _key(OpenAIGenerator(MODEL, "http://127.0.0.1:8001/v1", json_mode="json_object"))


def test_keys_of_local_models_keep_their_old_shape():
    """Written out by hand: the identity a local generator's request had before servers entered keys."""
    before = {
        "backend": "default", "model_id": "gemma", "messages": [["system", "S"], ["user", "Hi"]], "max_tokens": 4,
        "temperature": 0.0, "seed": None, "top_logprobs": 0, "json_schema": None,
    }
    assert _key(SimpleNamespace(name="default", model_id="gemma")) == cache_key(before)


def test_detectors_of_one_model_on_three_servers_are_three_voters(tmp_path):
    """`generate`'s clients: specs openai:MODEL@URL build one generator per server, and their keys differ."""
    urls = [f"http://127.0.0.1:{port}/v1" for port in (8101, 8102, 8103)]
    config = GenerateConfig(corpus="c.jsonl", detectors=[f"openai:{MODEL}@{url}" for url in urls], writer="default",
                            fold_system="no")
    clients = Clients(config, tmp_path, tmp_path / "cache.sqlite", load_generator)
    generators = [clients.get(spec).generator for spec in config.detectors.specs]
    clients.close()
    assert [g.base_url for g in generators] == urls and {g.model_id for g in generators} == {MODEL}
    assert len({_key(g) for g in generators}) == 3
    assert {g.fold_system for g in generators} == {False}  # --fold-system no


def test_auto_asks_the_server_once_and_keeps_system_messages_off_llama_cpp_python():
    script = [("status", 200, MODELS_OF["vllm"]), ("status", 200, CHAT), ("status", 200, CHAT)]
    with FaultProxy(upstream_port=9, script=script) as proxy:
        generator = load_generator(f"openai:{MODEL}", ModelOptions(base_url=proxy.base_url, concurrency=1))
        assert generator.fold_system is None  # auto is the registry's default; undecided before the first call
        generator.generate([REQUEST])
        generator.generate([REQUEST])
    assert [seen["path"] for seen in proxy.seen] == ["/v1/models", "/v1/chat/completions", "/v1/chat/completions"]
    assert generator.fold_system is False
    assert generator.payload(REQUEST)["messages"][0] == {"role": "system", "content": "S"}


def test_auto_folds_on_llama_cpp_python_and_leaves_requests_for_later_when_the_server_cannot_say():
    script = [("status", 503, {"error": {"message": "loading model"}}), ("status", 200, MODELS_OF["me"]),
              ("status", 200, CHAT)]
    with FaultProxy(upstream_port=9, script=script) as proxy:
        generator = OpenAIGenerator(MODEL, proxy.base_url, fold_system="auto")
        with pytest.raises(GenerationFailed) as failed:
            generator.generate([REQUEST, REQUEST])
        assert generator.fold_system is None and sorted(failed.value.failures) == [0, 1]
        assert "fold_system 'auto'" in failed.value.failures[0] and "HTTP 503" in failed.value.failures[0]
        [result] = generator.generate([REQUEST])
    assert result.text == "ok" and generator.fold_system is True
    assert generator.payload(REQUEST)["messages"] == [{"role": "user", "content": "S\n\nHi"}]


# ---- the real llama.cpp servers --------------------------------------------------------------


@pytest.mark.slow
def test_llama_cpp_python_drops_system_messages_unless_auto_folds_them(llama_chat_server):
    system = "You are a careful biomedical fact checker. Answer with one word, yes or no."
    user = ChatMessage("user", "Is insulin a hormone?")
    asked = GenerateRequest(messages=(ChatMessage("system", system), user), max_tokens=1, seed=0)
    bare = GenerateRequest(messages=(user,), max_tokens=1, seed=0)
    auto = load_generator(f"openai:{MODEL}", ModelOptions(base_url=llama_chat_server, concurrency=1))
    never = OpenAIGenerator(MODEL, llama_chat_server, concurrency=1, fold_system=False)
    [folded] = auto.generate([asked])
    dropped, alone = never.generate([asked, bare])
    assert auto.fold_system is True
    # the gemma chat format drops the system message: the server saw the same prompt as without it
    assert dropped.usage.prompt_tokens == alone.usage.prompt_tokens
    assert folded.usage.prompt_tokens >= alone.usage.prompt_tokens + 10  # the system text's ~16 words reached it


@pytest.mark.slow
def test_one_model_name_on_two_real_servers_is_asked_on_each(llama_server, llama_chat_server, tmp_path):
    """Before servers entered the key, the second server's answer came from the first one's cache entry."""
    prompt = ChatPrompt(None, 'Is "insulin lowers blood sugar" a biomedical fact? Answer in JSON.')

    def meter_of(base_url: str):
        generator = OpenAIGenerator(MODEL, base_url, concurrency=1, json_mode="json_object", fold_system="auto")
        client = StructuredClient(generator, RequestCache(tmp_path / "requests.sqlite"), max_attempts=1, max_tokens=12)
        client.call_many([prompt], Verdict)
        return client.meter.calls, client.meter.cached_calls

    assert meter_of(llama_server) == (1, 0)
    assert meter_of(llama_chat_server) == (1, 0)
    assert meter_of(llama_server) == (0, 1)
