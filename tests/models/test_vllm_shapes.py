"""The `openai:` backends on vLLM's own response shapes, recorded from vLLM's source (tests/models/fixtures/vllm:
its README names the files and commits; the numbers are invented): the echoed completion crossknow scores from, a
chat completion's log-probabilities, and vLLM's error bodies, old and new, served over HTTP by a scripted proxy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crossknow.errors import CrossknowError, UnscorableRequest
from crossknow.models.generator import ChatMessage, GenerateRequest
from crossknow.models.openai_generator import OpenAIGenerator
from crossknow.models.openai_scorer import OpenAIScorer
from crossknow.models.protocol import ScoreRequest

from ..fault_proxy import FaultProxy

FIXTURES = Path(__file__).parent / "fixtures" / "vllm"
PROMPT = "The capital of France is Paris"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def test_the_echoed_completion_scores_the_continuation_after_vllms_bos() -> None:
    """vLLM echoes BOS as '<bos>' (null log-probability, no top list) and counts its 5 characters in every later
    text_offset, while `text` is the prompt without it; the generated '.' is left out by usage.completion_tokens."""
    body = fixture("completion_echo")
    logprobs = body["choices"][0]["logprobs"]
    assert logprobs["tokens"][0] == "<bos>" and logprobs["token_logprobs"][0] is None
    assert body["choices"][0]["text"] == PROMPT + "."
    scorer = OpenAIScorer("google/gemma-2-2b", "http://127.0.0.1:9/v1")
    paris = scorer._parse(body, "The capital of France is", PROMPT, keep=True)
    assert (paris.token_logprobs, paris.greedy) == ((-0.0391,), True)  # ' Paris' is its position's top-1
    france = scorer._parse(body, "The capital of", PROMPT, keep=True)
    assert france.token_logprobs == (-1.2264, -0.1187, -0.0391) and france.greedy
    whole = scorer._parse(body, "", PROMPT, keep=True)  # BOS is the context: every prompt token is scored
    assert whole.token_logprobs == (-3.2871, -5.8812, -0.0453, -1.2264, -0.1187, -0.0391)
    assert whole.greedy is False  # 'I' outranks 'The', ' first' outranks ' capital'


def test_a_score_over_http_reads_vllms_body_whole() -> None:
    with FaultProxy(upstream_port=9, script=[("status", 200, fixture("completion_echo"))]) as proxy:
        scorer = OpenAIScorer("google/gemma-2-2b", proxy.base_url)
        (result,) = scorer.score([ScoreRequest("The capital of France is", " Paris")])
    assert (result.logprob_sum, result.n_tokens, result.greedy) == (pytest.approx(-0.0391), 1, True)
    sent = json.loads(proxy.seen[0]["body"])
    assert (sent["echo"], sent["logprobs"], sent["max_tokens"]) == (True, 1, 1)  # vLLM: prompt_logprobs = logprobs


@pytest.mark.parametrize("name", ["error_context_length", "error_flat_old"])
def test_vllms_context_length_refusal_makes_one_request_unscorable(name: str) -> None:
    """vLLM 0.10.1 and later nest the error ({"error": {...}}); earlier releases answer flat ({"object": "error",
    ...}). Either way the too long request is unscorable, at once, and the run goes on."""
    script = [("status", 200, fixture("completion_echo")), ("status", 400, fixture(name))]
    with FaultProxy(upstream_port=9, script=script) as proxy:
        scorer = OpenAIScorer("google/gemma-2-2b", proxy.base_url, concurrency=1, max_retries=5)
        with pytest.raises(UnscorableRequest, match="longer than the server's context: .*context length") as error:
            scorer.score([ScoreRequest("The capital of France is", " Paris"), ScoreRequest("long " * 9000, "end")])
    assert error.value.index == 1 and len(proxy.seen) == 2  # not retried


@pytest.mark.parametrize(("name", "message"), [
    ("error_model_not_found", r"HTTP 404: The model `no-such-model` does not exist\."),
    ("error_validation", r"HTTP 400: Requested sample logprobs of 21, which is greater than max allowed: 20"),
])
def test_any_other_vllm_refusal_fails_at_once_with_vllms_message(name: str, message: str) -> None:
    status = fixture(name)["error"]["code"]
    with FaultProxy(upstream_port=9, script=[("status", status, fixture(name))]) as proxy:
        scorer = OpenAIScorer("no-such-model", proxy.base_url, max_retries=5)
        with pytest.raises(CrossknowError, match=message) as error:
            scorer.score([ScoreRequest("a", " b")])
    assert not isinstance(error.value, UnscorableRequest) and len(proxy.seen) == 1


def test_a_chat_completion_gives_vllms_top_log_probabilities() -> None:
    """vLLM's chat `logprobs.content`: each token with its own log-probability and its top alternatives."""
    with FaultProxy(upstream_port=9, script=[("status", 200, fixture("chat_logprobs"))]) as proxy:
        generator = OpenAIGenerator("google/gemma-2-2b", proxy.base_url, fold_system=False)
        (result,) = generator.generate([GenerateRequest(messages=(ChatMessage("user", "Capital of France?"),),
                                                        max_tokens=2, top_logprobs=2)])
    assert result.text == "Paris."
    assert [(t.token, t.logprob) for t in result.logprobs] == [("Paris", -0.0102), (".", -0.4519)]
    assert result.logprobs[0].top == (("Paris", -0.0102), ("The", -4.812))
    sent = json.loads(proxy.seen[0]["body"])
    assert (sent["logprobs"], sent["top_logprobs"]) == (True, 2)


def test_the_in_process_scorer_reads_vllms_prompt_log_probabilities() -> None:
    """The `vllm:` scorer's reading of vLLM's prompt log-probabilities (the per-position entries its server also
    serialises as `prompt_logprobs`: None first, then token id -> logprob, rank, decoded token): a continuation's
    values, and greedy only where every token ranks first."""
    from types import SimpleNamespace

    from crossknow.models.vllm_engine import VLLMScorer

    entries = fixture("completion_prompt_logprobs")["choices"][0]["prompt_logprobs"]
    logprobs = [None] + [{int(token): SimpleNamespace(**value) for token, value in entry.items()}
                         for entry in entries[1:]]
    ids = [2, 651, 6037, 576, 6081, 603, 7127]  # BOS, then the ids of "The capital of France is Paris"
    scorer = object.__new__(VLLMScorer)  # its engine is not needed to read a result
    paris = scorer._result(0, ids[:6], ids[6:], logprobs, keep=True)
    assert (paris.token_logprobs, paris.n_tokens, paris.greedy) == ((-0.0391,), 1, True)
    capital = scorer._result(0, ids[:2], ids[2:4], logprobs[:4], keep=True)  # the prompt "The capital of"
    assert capital.token_logprobs == (-5.8812, -0.0453) and capital.greedy is False  # ' capital' ranks 14th
