"""The HF scorer against an independent float64 computation (tests/reference_scoring.py), one option at a time,
on a separately loaded float64 copy of the embedded model."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM

from crossknow.data.schemas import MCItem
from crossknow.models.hf_scorer import option_chunks
from crossknow.models.protocol import ScoreRequest
from crossknow.scoring.rules import option_requests
from tests.reference_scoring import reference

pytestmark = pytest.mark.slow
TOLERANCE = 1e-3  # float32 scorer vs float64 reference, summed over up to ~20 tokens


@pytest.fixture(scope="module")
def reference_model(embedded_checkpoint_dir):
    return AutoModelForCausalLM.from_pretrained(embedded_checkpoint_dir, dtype=torch.float64).eval()


EDGE_ITEMS = [
    # trailing space before [BLANK]
    MCItem(id="space", lang="en", kind="cloze", prompt="The capital of France is [BLANK].",
           options=["Paris", "Berlin", "Madrid"], answer=0),
    # [BLANK] at the start: empty context
    MCItem(id="start", lang="en", kind="cloze", prompt="[BLANK] can be used to control blood sugar level.",
           options=["Insulin", "Aspirin"], answer=0),
    # [BLANK] at the end
    MCItem(id="end", lang="en", kind="cloze", prompt="Blood sugar is lowered by [BLANK]",
           options=["insulin", "glucagon"], answer=0),
    # Japanese, no spaces
    MCItem(id="ja", lang="ja", kind="cloze", prompt="日本の首都は[BLANK]です。",
           options=["東京", "大阪", "京都"], answer=0),
    # the option's last token merges with the text after the blank
    MCItem(id="merge", lang="en", kind="cloze", prompt="She went [BLANK]ning in the park.",
           options=["run", "swim"], answer=0),
    # question rule: the newline stays in the context
    MCItem(id="question", lang="en", kind="question", prompt="Which substance helps manage glycemic levels?",
           options=["insulin", "caffeine", "a single token?"], answer=0),
]


@pytest.mark.parametrize("rule", ["adaxeval", "lm-eval"])
def test_scores_equal_plain_float64_computation(embedded_scorer, reference_model, rule):
    requests = [option.request for item in EDGE_ITEMS for option in option_requests(item, rule)]
    results = embedded_scorer.score(requests, keep_token_logprobs=True)
    for request, result in zip(requests, results, strict=True):
        values, greedy = reference(reference_model, embedded_scorer.tokenizer, request.context, request.continuation)
        assert result.n_tokens == len(values), request
        assert result.logprob_sum == pytest.approx(sum(values), abs=TOLERANCE), request
        assert result.token_logprobs == pytest.approx(values, abs=TOLERANCE), request
        assert result.greedy == greedy, request


def test_options_of_very_different_lengths_pass_in_chunks_with_the_float64_numbers(embedded_scorer, reference_model):
    """One context, options of 1 to about 40 tokens: the option pass splits into chunks of similar length,
    each continuing its own copy of the context's KV cache."""
    context = "After the operation, the patient was given"
    continuations = [" rest", " a long course of antibiotics, physiotherapy twice a day, a strict diet without salt or "
                     "sugar, and weekly visits to the clinic for blood tests", " insulin", " an injection of morphine",
                     " a cup of sweet tea", " two weeks of bed rest", " a bag of ice for the pain"]
    requests = [ScoreRequest(context, continuation) for continuation in continuations]
    lengths = [len(embedded_scorer.encode_request(request)[1]) - 1 for request in requests]
    assert len(option_chunks(lengths)) >= 2  # the case under test
    for request, result in zip(requests, embedded_scorer.score(requests), strict=True):
        values, greedy = reference(reference_model, embedded_scorer.tokenizer, request.context, request.continuation)
        assert result.logprob_sum == pytest.approx(sum(values), abs=TOLERANCE), request
        assert result.greedy == greedy, request


def test_option_chunks_minimise_padded_tokens_plus_a_cost_per_pass():
    # sorted: 30 (row 0), 29 (3), 6 (5), 5 (1), 5 (2), 1 (6); row 4 feeds nothing and needs no pass.
    # one pass: 6 * 30 + 32 = 212; [30, 29] + [6, 5, 5, 1]: 2 * 30 + 32 + 4 * 6 + 32 = 148;
    # three passes ([30, 29], [6, 5, 5], [1]): 92 + 50 + 33 = 175
    assert option_chunks([30, 5, 5, 29, 0, 6, 1], overhead=32) == [[0, 3], [5, 1, 2, 6]]
    assert option_chunks([30, 5, 5, 29, 0, 6, 1], overhead=0) == [[0], [3], [5], [1, 2], [6]]  # no padding at all
    assert option_chunks([30, 5, 5, 29, 0, 6, 1], overhead=10**6) == [[0, 3, 5, 1, 2, 6]]  # one pass
    assert option_chunks([0, 0]) == []  # one-token options: no option pass


def test_batching_and_grouping_do_not_change_numbers(embedded_scorer):
    """Contexts of different lengths in one batch (left padding), shared contexts, one-token options."""
    requests = [option.request for item in EDGE_ITEMS for option in option_requests(item, "adaxeval")]
    requests += [ScoreRequest("A much longer context that pads the others in its batch, " * 3, " x")]
    previous = embedded_scorer.batch_size
    try:
        embedded_scorer.batch_size = 1
        one_at_a_time = [embedded_scorer.score([request])[0] for request in requests]
        embedded_scorer.batch_size = 16
        batched = embedded_scorer.score(requests)
    finally:
        embedded_scorer.batch_size = previous
    for single, together in zip(one_at_a_time, batched, strict=True):
        assert together.logprob_sum == pytest.approx(single.logprob_sum, abs=1e-4)
        assert together.greedy == single.greedy


def test_greedy_flag_is_true_for_the_models_own_continuation(embedded_scorer, reference_model):
    tokenizer = embedded_scorer.tokenizer
    context = "The capital of France is"
    ids = tokenizer(context, return_tensors="pt").input_ids
    with torch.no_grad():
        generated = reference_model.generate(ids, max_new_tokens=3, do_sample=False)[0, ids.shape[1]:]
    continuation = tokenizer.decode(generated)
    assert tokenizer(context + continuation).input_ids[ids.shape[1]:] == generated.tolist()  # round-trips
    own, unlikely = embedded_scorer.score([ScoreRequest(context, continuation), ScoreRequest(context, " a purple")])
    assert own.greedy and own.n_tokens == 3
    assert not unlikely.greedy
