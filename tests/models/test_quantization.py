"""`--quantization 8bit|4bit`: bitsandbytes' weights of a local transformers model, on the CPU. The scorer's fast paths
(shared contexts, the logit head) must give what transformers' own forward of the same quantised model gives, a sweep
must load each checkpoint (its weights cannot be copied into quantised ones), and a run must record the format."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from crossknow.errors import CrossknowError
from crossknow.evaluation.pipeline import run_evaluate
from crossknow.evaluation.records import EvaluateConfig
from crossknow.models.backends.local import llamacpp_decodes
from crossknow.models.hf_loading import LoadSettings
from crossknow.models.hf_scorer import HFScorer
from crossknow.models.protocol import ScoreRequest
from crossknow.models.specs import ModelOptions
from crossknow.models.sweep_scorers import SweepScorers
from tests.gpu.tiny_hf_model import checkpoint_pair, write_tiny_model
from tests.reference_scoring import reference_logprobs
from tests.training.tiny_run import DEMO_DIR

REQUESTS = [
    ScoreRequest("The capital of France is", " Paris."),
    ScoreRequest("The capital of France is", " Berlin, a city."),
    ScoreRequest("東京は日本の首都です。", "大阪は"),
    ScoreRequest("", "Water boils at one hundred degrees."),
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=3)


def reference_sums(scorer: HFScorer) -> list[float]:
    """Each request alone through transformers' forward of the scorer's model, log-softmax in float64 over the
    whole vocabulary (tests/reference_scoring), on the scorer's own token ids: the plain computation."""
    return [sum(reference_logprobs(scorer.model, *scorer.encode_request(request))[0]) for request in REQUESTS]


@pytest.mark.parametrize(("quantization", "linear", "named"), [("8bit", "Linear8bitLt", "LLM.int8"),
                                                               ("4bit", "Linear4bit", "NF4")])
def test_quantised_weights_score_as_transformers_forward_of_them(tiny, quantization, linear, named):
    plain = HFScorer(str(tiny), device="cpu")
    quantised = HFScorer(str(tiny), device="cpu", load=LoadSettings(quantization=quantization))
    assert type(quantised.model.model.layers[0].mlp.up_proj).__name__ == linear
    assert quantised.model_id == f"{tiny}, bitsandbytes {named}"
    assert type(quantised.decoder).__name__ == "TransformersDecoder"  # crossknow's Gemma 3 computes plain weights
    got = [result.logprob_sum for result in quantised.score(REQUESTS)]
    assert got == pytest.approx(reference_sums(quantised), abs=1e-4)
    unquantised = [result.logprob_sum for result in plain.score(REQUESTS)]
    assert max(abs(a - b) for a, b in zip(got, unquantised, strict=True)) > 1e-3  # the weights did change


def test_a_sweep_loads_each_quantised_checkpoint(tiny, tmp_path):
    """Two checkpoints of one run, the second with its last block changed: with 8-bit weights (stored as int8 in
    the parameters' own shapes, so a weight switch would fit and copy float values into them) each is loaded."""
    first, second = checkpoint_pair(tiny, tmp_path)
    options = ModelOptions(device="cpu", quantization="8bit")
    sweep = SweepScorers([f"hf:{first}", f"hf:{second}"], options)
    first_sums = [result.logprob_sum for result in sweep.scorer_for(f"hf:{first}").score(REQUESTS)]
    swept = [result.logprob_sum for result in sweep.scorer_for(f"hf:{second}").score(REQUESTS)]
    assert sweep.loads == 2 and sweep.prefix is None
    alone = HFScorer(str(second), device="cpu", load=LoadSettings(quantization="8bit"))
    assert swept == [result.logprob_sum for result in alone.score(REQUESTS)]
    assert all(math.isfinite(value) for value in swept)
    assert max(abs(a - b) for a, b in zip(swept, first_sums, strict=True)) > 1e-2  # the second checkpoint's own


def test_a_run_records_the_format_and_refuses_another_on_resume(tiny, tmp_path):
    data, out = str(DEMO_DIR / "items.jsonl"), tmp_path / "run"
    run_evaluate(EvaluateConfig(model=f"hf:{tiny}", data=data, quantization="4bit", device="cpu", limit=2), out)
    assert json.loads((out / "model.json").read_text())["model_id"].endswith(", bitsandbytes NF4")
    with pytest.raises(CrossknowError, match=r"model\.quantization: '4bit' -> '8bit'"):
        run_evaluate(EvaluateConfig(model=f"hf:{tiny}", data=data, quantization="8bit", device="cpu", limit=2), out)


def test_a_quantised_gguf_model_generates_on_transformers():
    assert not llamacpp_decodes(ModelOptions(device="cpu", quantization="4bit"))
    with pytest.raises(CrossknowError, match="llama.cpp decodes the GGUF's own"):
        llamacpp_decodes(ModelOptions(device="cpu", quantization="8bit", generator_backend="llamacpp"))
