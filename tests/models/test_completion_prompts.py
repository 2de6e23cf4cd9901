"""The completion path of the Generator protocol: a plain prompt continued as it is (BOS, no chat markup) by
the local backends and through a real llama.cpp server's /v1/completions; the prompt format each backend
takes and the spec suffix that overrides it; P(yes) after a completion prompt, exact from the engine."""

from __future__ import annotations

import httpx
import pytest
import torch

from crossknow.errors import CrossknowError, ModelSpecError
from crossknow.generation.ask import CompletionPrompt, TextOutput
from crossknow.generation.structured import StructuredClient
from crossknow.models.generator import ChatMessage, GenerateRequest
from crossknow.models.protocol import ScoreRequest
from crossknow.models.registry import ModelOptions, check_spec, load_generator, split_prompt_format
from crossknow.store.request_cache import RequestCache

FEW_SHOT = "English: water\nFrench: eau\n\nEnglish: bread\nFrench: pain\n\nEnglish: the red house\nFrench:"
"""A few-shot translation prompt that a base model continues with one line."""


def test_a_request_holds_messages_or_a_prompt_exactly():
    GenerateRequest(prompt="x")
    GenerateRequest(messages=(ChatMessage("user", "x"),))
    with pytest.raises(CrossknowError, match="exactly one"):
        GenerateRequest()
    with pytest.raises(CrossknowError, match="exactly one"):
        GenerateRequest(messages=(ChatMessage("user", "x"),), prompt="x")


def test_the_spec_suffix_names_the_format():
    assert split_prompt_format("default") == ("default", "auto")
    assert split_prompt_format("openai:gemma#completion") == ("openai:gemma", "completion")
    assert split_prompt_format("hf:/models/x@main#chat") == ("hf:/models/x@main", "chat")
    with pytest.raises(ModelSpecError, match="#chat or #completion"):
        split_prompt_format("default#json")
    assert check_spec("openai:gemma#completion", "http://127.0.0.1:1/v1", "generator") == "openai"
    with pytest.raises(ModelSpecError, match="only a generator spec"):
        check_spec("default#completion", None, "model")


def test_a_server_model_is_chat_unless_its_spec_says_completion():
    options = ModelOptions(base_url="http://127.0.0.1:9/v1")
    assert load_generator("openai:m", options).prompt_format == "chat"
    assert load_generator("openai:m#completion", options).prompt_format == "completion"


@pytest.mark.slow
def test_the_embedded_base_model_continues_the_plain_text(embedded_generator):
    """`default` has no chat template, so it is asked by completion; the prompt is BOS + the text, and the greedy
    output is the argmax continuation of a direct forward pass over exactly those tokens."""
    generator = embedded_generator
    assert generator.prompt_format == "completion"
    result = generator.generate([GenerateRequest(prompt=FEW_SHOT, max_tokens=8, stop=("\n",))])[0]
    ids = generator.tokenizer(FEW_SHOT).input_ids
    assert ids[0] == generator.tokenizer.bos_token_id
    assert "<start_of_turn>" not in generator.tokenizer.decode(ids)
    assert result.usage.prompt_tokens == len(ids)
    expected = []
    with torch.no_grad():
        for _ in range(8):
            logits = generator.model(torch.tensor([ids + expected])).logits[0, -1]
            expected.append(int(logits.argmax()))
    text = generator.tokenizer.decode(expected)
    assert result.text == text.split("\n")[0]
    assert result.text.strip() and "\n" not in result.text


@pytest.mark.slow
def test_yes_no_after_a_completion_prompt_is_the_engines_exact_probability(embedded_generator, embedded_scorer,
                                                                         tmp_path):
    prompt = "Q: Is Paris in France?\nA: yes\n\nQ: Is Tokyo in Brazil?\nA: no\n\nQ: Is Rome in Italy?\nA:"
    client = StructuredClient(embedded_generator, RequestCache(tmp_path / "cache.sqlite"))
    outcome = client.yes_no_many([CompletionPrompt(prompt)])[0]
    again = client.yes_no_many([CompletionPrompt(prompt)])[0]
    assert not outcome.cached and again.cached and again.value == outcome.value
    yes, no = embedded_scorer.score([ScoreRequest(prompt, " yes"), ScoreRequest(prompt, " no")])
    p_yes = 1 / (1 + torch.exp(torch.tensor(no.logprob_sum - yes.logprob_sum)).item())
    assert outcome.valid and outcome.value == pytest.approx(p_yes, abs=1e-4)
    assert outcome.value > 0.5  # the model, shown two examples, says yes to a true fact
    # calibrated: the mean P(yes) with the question emptied is the lean, divided out by Zhao et al.'s rule
    empty = [prompt.replace("Is Rome in Italy?", e) for e in ("N/A", "", "[MASK]")]
    leans = []
    for text in empty:
        yes_e, no_e = embedded_scorer.score([ScoreRequest(text, " yes"), ScoreRequest(text, " no")])
        leans.append(1 / (1 + torch.exp(torch.tensor(no_e.logprob_sum - yes_e.logprob_sum)).item()))
    lean = sum(leans) / 3
    baseline = client.yes_no_baseline([CompletionPrompt(text) for text in empty])
    assert baseline == pytest.approx(lean, abs=1e-4)
    [calibrated] = client.yes_no_many([CompletionPrompt(prompt)], [baseline])
    by_hand = (p_yes / lean) / (p_yes / lean + (1 - p_yes) / (1 - lean))
    assert calibrated.value == pytest.approx(by_hand, abs=1e-4) and calibrated.yes_probability == calibrated.value


@pytest.mark.slow
def test_completion_requests_go_to_the_servers_completions_endpoint(llama_chat_server):
    """The request is the same server's /v1/completions for the same body, posted directly: the same prompt tokens,
    fewer than the chat endpoint counts for the same text as a user message (its turn markup), and one line of
    output. (Not the same text word for word: the server reuses its KV cache across requests, and a greedy pick
    between two near-tied tokens then differs, as seen once: ' le red-hous' against ' le red house'.)"""
    generator = load_generator("openai:gemma#completion", ModelOptions(base_url=llama_chat_server))
    client = StructuredClient(generator, max_tokens=12)
    outcome = client.call_many([CompletionPrompt(FEW_SHOT)], TextOutput(lambda t: (t.strip() or None, "empty")))[0]
    direct = httpx.post(f"{llama_chat_server}/completions", json={
        "model": "gemma", "prompt": FEW_SHOT, "max_tokens": 12, "temperature": 0.0, "seed": 0, "stop": ["\n"],
    }, timeout=120).json()
    chat = httpx.post(f"{llama_chat_server}/chat/completions", json={
        "model": "gemma", "messages": [{"role": "user", "content": FEW_SHOT}], "max_tokens": 1,
    }, timeout=120).json()
    assert outcome.valid and "\n" not in outcome.raw_text
    assert outcome.usage.prompt_tokens == direct["usage"]["prompt_tokens"] < chat["usage"]["prompt_tokens"]
    with pytest.raises(CrossknowError, match="cannot carry a JSON schema"):
        generator.payload(GenerateRequest(prompt="x", json_schema={"type": "object"}))


@pytest.mark.slow
def test_a_completion_retry_samples_instead_of_repeating_the_greedy_output(embedded_generator):
    """An invalid greedy output is not asked for again word for word: attempt 2 samples (RETRY_TEMPERATURE)."""
    outputs: list[str] = []

    def never_valid(text: str):
        outputs.append(text)
        return None, "rejected"

    client = StructuredClient(embedded_generator, max_tokens=8, max_attempts=3)
    outcome = client.call_many([CompletionPrompt(FEW_SHOT)], TextOutput(never_valid))[0]
    assert not outcome.valid and outcome.attempts == 3 and outcome.error == "rejected"
    assert len(set(outputs)) > 1
