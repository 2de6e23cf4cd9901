"""`--quantization` on a CUDA device, where bitsandbytes runs its CUDA kernels instead of the CPU's: the scorer's
batched scores equal transformers' own forward of the same quantised model, one request at a time (skipped without
CUDA; tests/models/test_quantization.py checks the CPU)."""

from __future__ import annotations

import pytest
import torch

from crossknow.models.hf_loading import LoadSettings
from crossknow.models.hf_scorer import HFScorer
from tests.gpu.tiny_hf_model import write_tiny_model
from tests.models.test_quantization import REQUESTS, reference_sums

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


@pytest.mark.parametrize("quantization", ["8bit", "4bit"])
def test_quantised_scores_on_cuda_equal_a_plain_forward(tmp_path, quantization):
    model = write_tiny_model(tmp_path / "model", seed=3)
    scorer = HFScorer(str(model), device="cuda", load=LoadSettings(quantization=quantization))
    assert scorer.model.device.type == "cuda"
    got = [result.logprob_sum for result in scorer.score(REQUESTS)]
    assert got == pytest.approx(reference_sums(scorer), abs=1e-3)
