"""The HF scorer at its edges: logit scalings of other architectures, too-long and non-finite requests.

Tiny random models are built here (2 layers, hidden 32) from transformers' own configurations;
the reference is always the model's own forward, log-softmaxed plainly.
"""

from __future__ import annotations

import shutil

import pytest
import torch
from transformers import (
    CohereConfig,
    CohereForCausalLM,
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    GraniteConfig,
    GraniteForCausalLM,
)

from crossknow.errors import CrossknowError, UnscorableRequest
from crossknow.models.decoder import decoder_of
from crossknow.models.hf_scorer import HFScorer
from crossknow.models.logit_head import HEAD_CHECK_DIR, LogitHead, check_against_forward, check_head_once
from crossknow.models.protocol import ScoreRequest

SMALL = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1)
SCALED_MODELS = {
    # logit scales far from 1 so that a missed transform changes the numbers
    "cohere-logit_scale": lambda vocab: CohereForCausalLM(CohereConfig(vocab_size=vocab, logit_scale=8.0, **SMALL)),
    "granite-logits_scaling": lambda vocab: GraniteForCausalLM(
        GraniteConfig(vocab_size=vocab, logits_scaling=0.05, **SMALL)
    ),
    "gemma3-softcap": lambda vocab: Gemma3ForCausalLM(
        Gemma3TextConfig(vocab_size=vocab, head_dim=16, final_logit_softcapping=0.05, **SMALL)
    ),
}


@pytest.mark.parametrize("name", sorted(SCALED_MODELS))
def test_scaled_logits_are_scored_as_the_models_forward(name):
    torch.manual_seed(0)
    model = SCALED_MODELS[name](128).eval()
    ids = torch.randint(0, 128, (1, 12))
    targets = torch.randint(0, 128, (12,))
    with torch.no_grad():
        expected = torch.log_softmax(model(input_ids=ids).logits[0].float(), dim=-1)[torch.arange(12), targets]
        hidden = model.get_decoder()(input_ids=ids).last_hidden_state[0]
        head = LogitHead(decoder_of(model))
        logprob, _ = head.target_logprobs(hidden, torch.arange(12), targets)
        assert logprob.tolist() == pytest.approx(expected.tolist(), abs=1e-5)
        check_against_forward(decoder_of(model), head, "cpu", name)
        head.factor, head.softcap = 1.0, None  # a scorer that ignored the transform
        unscaled, _ = head.target_logprobs(hidden, torch.arange(12), targets)
        assert (unscaled - expected).abs().max() > 0.05
        with pytest.raises(CrossknowError, match="transforms logits"):
            check_against_forward(decoder_of(model), head, "cpu", name)


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory, embedded_checkpoint_dir):
    """A tiny random Granite (logits / 4) with the embedded Gemma tokenizer and 24 positions."""
    torch.manual_seed(0)
    config = GraniteConfig(vocab_size=262_144, logits_scaling=4.0, max_position_embeddings=24, **SMALL)
    path = tmp_path_factory.mktemp("tiny_granite")
    GraniteForCausalLM(config).save_pretrained(path)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(embedded_checkpoint_dir / name, path / name)
    return path


def test_a_request_longer_than_the_positions_is_unscorable(tiny_model_dir):
    scorer = HFScorer(str(tiny_model_dir), device="cpu")
    fits, too_long = ScoreRequest("The sky is", " blue"), ScoreRequest("word " * 30, "end")
    with pytest.raises(UnscorableRequest, match="over the model's 24 positions") as error:
        scorer.score([fits, too_long])
    assert error.value.index == 1
    assert scorer.score([fits])[0].n_tokens == 1


def test_a_non_finite_log_probability_is_unscorable(tiny_model_dir, tmp_path):
    """A float16 overflow in the body (weights scaled past float16's range) makes every number NaN."""
    model = GraniteForCausalLM.from_pretrained(tiny_model_dir)
    with torch.no_grad():
        model.model.layers[0].mlp.down_proj.weight.mul_(1e7)
    model.save_pretrained(tmp_path)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tiny_model_dir / name, tmp_path / name)
    scorer = HFScorer(str(tmp_path), device="cpu", dtype="float16")
    with pytest.raises(UnscorableRequest, match=r"' blue'.*is nan.*float16") as error:
        scorer.score([ScoreRequest("The sky is", " blue"), ScoreRequest("Grass is", " green")])
    assert error.value.index == 0


@pytest.mark.slow
def test_bfloat16_log_probabilities_are_those_of_a_float32_projection(embedded_checkpoint_dir):
    """In bf16 the head's results equal a float32 projection of the same bf16 hidden states; the old
    head (projection in bf16, then cast) was off by the rounding of every logit."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(embedded_checkpoint_dir, dtype=torch.bfloat16).eval()
    tokenizer = AutoTokenizer.from_pretrained(embedded_checkpoint_dir)
    ids = tokenizer("The capital of France is Paris. 日本の首都は東京です。", return_tensors="pt").input_ids
    targets = ids[0, 1:]
    rows = torch.arange(len(targets))
    head = LogitHead(decoder_of(model))
    with torch.no_grad():
        hidden = model.get_decoder()(input_ids=ids).last_hidden_state[0, :-1]
        exact = torch.log_softmax(hidden.float() @ head.weight.float().T, dim=-1)[rows, targets]
        rounded = torch.log_softmax((hidden @ head.weight.T).float(), dim=-1)[rows, targets]
        ours, _ = head.target_logprobs(hidden, rows, targets)
    assert (ours - exact).abs().max() < 2e-3
    assert (rounded - exact).abs().max() > 10 * (ours - exact).abs().max()


def test_a_passed_head_check_is_remembered_and_a_changed_transform_is_checked_again(tmp_path, monkeypatch):
    monkeypatch.setenv("CROSSKNOW_CACHE", str(tmp_path))
    torch.manual_seed(0)
    model = SCALED_MODELS["gemma3-softcap"](128).eval()
    decoder = decoder_of(model)
    head = LogitHead(decoder)
    check_head_once(decoder, head, "cpu", "tiny")
    assert len(list((tmp_path / HEAD_CHECK_DIR).iterdir())) == 1

    def no_forward(*args, **kwargs):
        raise AssertionError("the remembered check ran the forward again")

    monkeypatch.setattr(model, "forward", no_forward)
    check_head_once(decoder, head, "cpu", "tiny")  # remembered: no forward
    monkeypatch.undo()
    monkeypatch.setenv("CROSSKNOW_CACHE", str(tmp_path))
    head.softcap = None  # a head that ignores the model's soft cap: a new check, which fails
    with pytest.raises(CrossknowError, match="transforms logits"):
        check_head_once(decoder, head, "cpu", "tiny")
    assert len(list((tmp_path / HEAD_CHECK_DIR).iterdir())) == 1  # the failure is not recorded
