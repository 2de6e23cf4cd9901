"""The in-process `vllm:` backend against crossknow's transformers backends on the same tiny random Gemma 3
(tests/gpu/tiny_hf_model.py), in float32: the same log-probabilities (vLLM's prompt log-probabilities on crossknow's
token ids) and greedy flags, the same greedy text, and JSON that follows its schema. Skipped without CUDA or vllm."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from crossknow.models.generator import ChatMessage, GenerateRequest
from crossknow.models.protocol import ScoreRequest
from crossknow.models.registry import ModelOptions, load_generator, load_scorer
from tests.gpu.tiny_hf_model import write_tiny_model

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs vllm (pip install vllm)"),
]

REQUESTS = [ScoreRequest("The capital of France is", " Paris."), ScoreRequest("", "Tokyo is the capital of Japan."),
            ScoreRequest("インスリンは", "血糖値を下げる。"), ScoreRequest("Water boils at ", "100 degrees.")]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny_vllm") / "model")


def test_vllm_scores_what_transformers_scores(tiny_model: Path) -> None:
    options = ModelOptions(device="cuda", dtype="float32")
    reference = load_scorer(f"hf:{tiny_model}", options).score(REQUESTS, keep_token_logprobs=True)
    scored = load_scorer(f"vllm:{tiny_model}", options).score(REQUESTS, keep_token_logprobs=True)
    for ours, theirs in zip(scored, reference, strict=True):
        assert ours.n_tokens == theirs.n_tokens
        assert ours.token_logprobs == pytest.approx(theirs.token_logprobs, abs=1e-4)
        assert ours.greedy == theirs.greedy


def test_vllm_generates_the_greedy_text_of_transformers_and_json_to_its_schema(tiny_model: Path) -> None:
    options = ModelOptions(device="cuda", dtype="float32")
    requests = [GenerateRequest(prompt="The capital of France is", max_tokens=12),
                GenerateRequest(messages=(ChatMessage("user", "Name a city."),), max_tokens=12, top_logprobs=2)]
    reference = load_generator(f"hf:{tiny_model}", options).generate(requests)
    generated = load_generator(f"vllm:{tiny_model}", options).generate(requests)
    assert [r.text for r in generated] == [r.text for r in reference]
    assert all(len(t.top) >= 2 for t in generated[1].logprobs)
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    (constrained,) = load_generator(f"vllm:{tiny_model}", options).generate(
        [GenerateRequest(prompt="City:", max_tokens=40, json_schema=schema)])
    assert isinstance(json.loads(constrained.text)["city"], str)
