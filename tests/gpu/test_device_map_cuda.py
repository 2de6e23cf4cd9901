"""`--device-map` on CUDA: a model split between GPU 0 and the CPU (accelerate's CPU offload, computed on the GPU),
and, with two GPUs, over both, where hidden states and the KV cache cross devices. The scorer's batched scores must
equal transformers' forward of the plain model, and greedy generation its text (skipped without CUDA;
tests/models/test_device_map.py checks disk offload on the CPU)."""

from __future__ import annotations

import pytest
import torch

from crossknow.models.generator import GenerateRequest
from crossknow.models.hf_generator import HFGenerator
from crossknow.models.hf_loading import LoadSettings
from crossknow.models.hf_scorer import HFScorer
from tests.gpu.tiny_hf_model import write_tiny_model
from tests.models.test_device_map import REQUESTS, plain_sums

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


def placements(model_dir) -> list[tuple[str, str]]:
    """(name, max_memory) of the splits this machine can show: GPU 0 with the CPU, and two GPUs where present. Each
    device gets room for about half of the model (its float32 bytes)."""
    from transformers import AutoModelForCausalLM

    size = sum(p.numel() * 4 for p in AutoModelForCausalLM.from_pretrained(model_dir).parameters())
    half = f"{size // 2 // 1024}KiB"
    found = [("gpu0+cpu", f"0={half},cpu=4GiB")]
    if torch.cuda.device_count() >= 2:
        found.append(("gpu0+gpu1", f"0={half},1=4GiB"))
    return found


def test_a_split_model_scores_and_generates_as_the_plain_one(tmp_path):
    model_dir = write_tiny_model(tmp_path / "model", seed=3, hidden_size=256)
    requests = [GenerateRequest(prompt="The capital of France is", max_tokens=12, temperature=0.0)]
    plain_text = HFGenerator(str(model_dir), device="cuda:0", prompt_format="completion").generate(requests)[0].text
    for name, max_memory in placements(model_dir):
        load = LoadSettings(device_map="sequential", max_memory=max_memory)
        scorer = HFScorer(str(model_dir), load=load)
        assert len(set(scorer.model.hf_device_map.values())) == 2, (name, scorer.model.hf_device_map)
        got = [result.logprob_sum for result in scorer.score(REQUESTS)]
        assert got == pytest.approx(plain_sums(model_dir, scorer), abs=1e-3), name
        generator = HFGenerator(str(model_dir), prompt_format="completion", load=load)
        assert generator.generate(requests)[0].text == plain_text, name
