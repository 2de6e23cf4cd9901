"""The hf generator on the embedded model: prompt format, deterministic greedy and seeded sampling,
and top log-probabilities equal to a direct forward pass over prompt + output."""

from __future__ import annotations

import pytest
import torch

from crossknow.errors import CrossknowError
from crossknow.models.checkpoint_cache import EMBEDDED_MODEL_ID
from crossknow.models.generator import ChatMessage, GenerateRequest, Generator
from crossknow.models.hf_generator import gemma_prompt

QUESTION = (ChatMessage("system", "Answer briefly."), ChatMessage("user", "The capital of Japan is"))


def test_gemma_turn_format():
    messages = (
        ChatMessage("system", "Be brief."),
        ChatMessage("user", "Hi"),
        ChatMessage("assistant", "Hello"),
        ChatMessage("user", "日本の首都は?"),
    )
    assert gemma_prompt(messages) == (
        "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
        "<start_of_turn>model\nHello<end_of_turn>\n"
        "<start_of_turn>user\n日本の首都は?<end_of_turn>\n"
        "<start_of_turn>model\n"
    )
    assert gemma_prompt((ChatMessage("system", "S"),)) == "<start_of_turn>user\nS<end_of_turn>\n<start_of_turn>model\n"


@pytest.mark.slow
def test_greedy_output_and_top_logprobs_match_a_forward_pass(embedded_generator):
    generator = embedded_generator
    assert isinstance(generator, Generator)
    assert (generator.name, generator.model_id) == ("default", EMBEDDED_MODEL_ID)
    request = GenerateRequest(messages=QUESTION, max_tokens=5, top_logprobs=5)
    first, second = generator.generate([request, request])
    assert first == second  # deterministic
    print(first)
    prompt = generator.prompt_ids(QUESTION)
    assert generator.tokenizer.convert_ids_to_tokens(prompt[:2]) == ["<bos>", "<start_of_turn>"]
    assert first.usage.prompt_tokens == len(prompt)
    assert first.usage.completion_tokens == len(first.logprobs) == 5 and first.finish_reason == "length"
    assert "".join(step.token for step in first.logprobs) == first.text

    output = generator.tokenizer(first.text, add_special_tokens=False).input_ids
    assert len(output) == 5
    with torch.no_grad():
        logits = generator.model(torch.tensor([prompt + output])).logits[0].float()
    reference = torch.log_softmax(logits, dim=-1)
    for j, step in enumerate(first.logprobs):
        row = reference[len(prompt) - 1 + j]
        top = torch.topk(row, 5)
        assert int(top.indices[0]) == output[j]  # greedy: the chosen token is the argmax
        assert step.logprob == pytest.approx(float(row[output[j]]), abs=1e-4)
        assert [text for text, _ in step.top] == [generator.tokenizer.decode([int(i)]) for i in top.indices]
        assert [value for _, value in step.top] == pytest.approx(top.values.tolist(), abs=1e-4)


@pytest.mark.slow
def test_seeded_sampling_repeats_and_leaves_the_global_rng_alone(embedded_generator):
    sampled = GenerateRequest(messages=QUESTION, max_tokens=3, temperature=1.0, seed=11)
    state = torch.random.get_rng_state()
    a, b = embedded_generator.generate([sampled, sampled])
    assert a.text == b.text and a.logprobs is None and a.usage.completion_tokens == 3
    assert torch.equal(state, torch.random.get_rng_state())


@pytest.mark.slow
def test_stops_at_end_of_turn(embedded_generator, monkeypatch):
    tokenizer = embedded_generator.tokenizer
    assert {tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<end_of_turn>")} <= embedded_generator.stop_ids
    # make the greedy first token ("Answer", see above) a stop token: nothing is generated
    stops = embedded_generator.stop_ids | {tokenizer.convert_tokens_to_ids("Answer")}
    monkeypatch.setattr(embedded_generator, "stop_ids", stops)
    result = embedded_generator.generate([GenerateRequest(messages=QUESTION, max_tokens=5, top_logprobs=2)])[0]
    assert (result.text, result.finish_reason, result.usage.completion_tokens, result.logprobs) == ("", "stop", 0, ())


@pytest.mark.slow
def test_prompt_longer_than_the_model_is_refused_before_any_work(embedded_generator):
    limit = embedded_generator.model.config.max_position_embeddings
    huge = GenerateRequest(messages=(ChatMessage("user", "a " * limit),), max_tokens=1)
    with pytest.raises(CrossknowError, match=f"no room in the model's {limit} positions"):
        embedded_generator.generate([GenerateRequest(messages=QUESTION, max_tokens=1), huge])


@pytest.mark.slow
def test_uses_the_tokenizers_chat_template_when_it_has_one(embedded_generator, monkeypatch):
    template = (
        "{{ bos_token }}{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}[assistant] {% endif %}"
    )
    monkeypatch.setattr(embedded_generator.tokenizer, "chat_template", template)
    ids = embedded_generator.prompt_ids(QUESTION)
    assert embedded_generator.tokenizer.decode(ids) == (
        "<bos>[system] Answer briefly.\n[user] The capital of Japan is\n[assistant] "
    )
    assert ids.count(embedded_generator.tokenizer.bos_token_id) == 1  # the template's BOS only
