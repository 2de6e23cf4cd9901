"""The hf generator on the embedded model: prompt format, deterministic greedy and seeded sampling,
top log-probabilities equal to a direct forward pass over prompt + output, batched decoding equal to
one request at a time, decoding constrained to a JSON schema, and exact answer scoring."""

from __future__ import annotations

from typing import Literal

import pytest
import torch
from pydantic import BaseModel, ConfigDict, Field

from crossknow.errors import CrossknowError
from crossknow.models.chat_format import gemma_prompt
from crossknow.models.checkpoint_cache import EMBEDDED_MODEL_ID
from crossknow.models.gemma3_text import Gemma3Decoder
from crossknow.models.generator import AnswerContinuation, ChatMessage, GenerateRequest, Generator
from crossknow.models.protocol import ScoreRequest

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
    # deterministic: the same output; the two rows of one batch may round differently (seen on an AMD EPYC:
    # 1e-6 nats), so log-probabilities are equal within float32 noise
    assert (first.text, first.finish_reason, first.usage) == (second.text, second.finish_reason, second.usage)
    assert [step.token for step in first.logprobs] == [step.token for step in second.logprobs]
    assert [step.logprob for step in first.logprobs] == pytest.approx([step.logprob for step in second.logprobs],
                                                                      abs=1e-5)
    prompt = generator.request_ids(GenerateRequest(messages=QUESTION))
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
    ids = embedded_generator.request_ids(GenerateRequest(messages=QUESTION))
    assert embedded_generator.tokenizer.decode(ids) == (
        "<bos>[system] Answer briefly.\n[user] The capital of Japan is\n[assistant] "
    )
    assert ids.count(embedded_generator.tokenizer.bos_token_id) == 1  # the template's BOS only


# ---- batched decoding ----------------------------------------------------------------------------

BATCH_PROMPTS = (
    "The capital of Japan is",
    "Write one sentence about insulin.",
    "日本の首都はどこですか？",
    "Name a famous physicist and say what she or he discovered.",
)
"""Real prompts of different lengths, so that the batch is left-padded."""


@pytest.mark.slow
def test_batched_greedy_equals_one_at_a_time_with_a_stop_per_row(embedded_generator, monkeypatch):
    requests = [GenerateRequest(messages=(ChatMessage("user", p),), max_tokens=10) for p in BATCH_PROMPTS]
    requests[1] = GenerateRequest(messages=requests[1].messages, max_tokens=3)  # ends early: leaves the batch
    requests[2] = GenerateRequest(messages=requests[2].messages, max_tokens=10, stop=("\n",))
    monkeypatch.setattr(embedded_generator, "batch_size", 1)
    alone = embedded_generator.generate(requests)
    monkeypatch.setattr(embedded_generator, "batch_size", 4)
    together = embedded_generator.generate(requests)
    print(alone, together, sep="\n")
    # Left padding and a shared KV cache change only the shapes of the float32 products; on these
    # prompts the greedy tokens are identical (a near-tie could flip one in rare cases).
    assert together == alone
    assert [r.usage.completion_tokens for r in together] == [10, 3, together[2].usage.completion_tokens, 10]
    assert together[1].finish_reason == "length"
    # the stop string cut the row: the text stops before it, and tokens stopped counting there
    unstopped = embedded_generator.generate([GenerateRequest(messages=requests[2].messages, max_tokens=10)])[0]
    assert "\n" in unstopped.text and together[2].finish_reason == "stop"
    assert together[2].text == unstopped.text[: unstopped.text.index("\n")]
    assert together[2].usage.completion_tokens < unstopped.usage.completion_tokens


@pytest.mark.slow
def test_seeded_sampling_in_a_batch_equals_sampling_alone(embedded_generator, monkeypatch):
    sampled = GenerateRequest(messages=QUESTION, max_tokens=4, temperature=1.0, seed=5, top_logprobs=2)
    greedy = GenerateRequest(messages=(ChatMessage("user", BATCH_PROMPTS[3]),), max_tokens=4)
    monkeypatch.setattr(embedded_generator, "batch_size", 2)
    [alone] = embedded_generator.generate([sampled])
    mixed = embedded_generator.generate([greedy, sampled])
    assert mixed[1].text == alone.text and mixed[1].logprobs is not None
    assert [s.logprob for s in mixed[1].logprobs] == pytest.approx([s.logprob for s in alone.logprobs], abs=1e-4)
    assert mixed[0].logprobs is None  # settings stay per row


# ---- decoding constrained to a JSON schema ----------------------------------------------------


class Fact(BaseModel):
    model_config = ConfigDict(extra="forbid")
    factuality: Literal["yes", "no"]
    subject: str = Field(max_length=40)


@pytest.mark.slow
def test_json_schema_output_is_constrained_and_stops_at_the_closing_brace(embedded_generator):
    assert embedded_generator.constrain_json  # llguidance is installed with crossknow[hf]
    ask = (ChatMessage("user", 'Is "Insulin lowers blood sugar." a biomedical fact? Answer in JSON.'),)
    constrained = GenerateRequest(messages=ask, max_tokens=60, json_schema=Fact.model_json_schema())
    plain = GenerateRequest(messages=QUESTION, max_tokens=3)
    result, other = embedded_generator.generate([constrained, plain])
    print(result)
    fact = Fact.model_validate_json(result.text)  # valid as written, not repaired
    assert result.text.startswith('{"factuality": "') and result.text.endswith("}")
    assert result.finish_reason == "stop" and result.usage.completion_tokens < 60
    assert fact.factuality in ("yes", "no")
    # the unconstrained row of the same batch is untouched by the other row's grammar
    assert other == embedded_generator.generate([plain])[0]


@pytest.mark.slow
def test_score_answers_equals_the_engines_scorer(embedded_generator, embedded_scorer):
    prefix = '{"factuality": '
    asked = [AnswerContinuation(QUESTION, prefix, value) for value in ('"yes"', '"no"')]
    got = embedded_generator.score_answers(asked)
    context = embedded_generator.prompt_text(QUESTION) + prefix
    want = embedded_scorer.score([ScoreRequest(context, '"yes"'), ScoreRequest(context, '"no"')])
    assert got == pytest.approx([r.logprob_sum for r in want], abs=1e-4)
    prompt = embedded_generator.request_ids(GenerateRequest(messages=QUESTION))
    assert embedded_generator.tokenizer(context).input_ids[: len(prompt)] == prompt  # what the generator decodes from


@pytest.mark.slow
def test_the_generators_scorer_is_crossknows_gemma_3_on_the_generators_weights(embedded_generator, embedded_scorer):
    scorer = embedded_generator.scorer()
    assert type(scorer.decoder) is type(embedded_scorer.decoder) is Gemma3Decoder  # whichever loaded first
    weight = embedded_generator.model.get_input_embeddings().weight
    assert scorer.model.model.embed_tokens.weight.data_ptr() == weight.data_ptr()  # no second copy
    requests = [ScoreRequest("The capital of France is", option) for option in (" Paris", " Berlin", " a city")]
    assert scorer.score(requests) == embedded_scorer.score(requests)


@pytest.mark.slow
def test_without_the_constraint_a_schema_request_is_decoded_freely(embedded_generator, monkeypatch):
    """The fallback when llguidance is missing: plain decoding, validated and retried above the backend."""
    request = GenerateRequest(messages=QUESTION, max_tokens=3, json_schema=Fact.model_json_schema())
    monkeypatch.setattr(embedded_generator, "constrain_json", False)
    [free] = embedded_generator.generate([request])
    assert free == embedded_generator.generate([GenerateRequest(messages=QUESTION, max_tokens=3)])[0]
    assert not free.text.startswith("{")  # the base model answers in prose ("Answer briefly...")
