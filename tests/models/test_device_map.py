"""`--device-map` and `--max-memory`: a local transformers model placed by accelerate. On the CPU the one placement
that differs from a plain load is disk offload (a `max_memory` smaller than the model): every weight, the output layer
and the input embeddings included, lives on the meta device between calls and accelerate's hooks bring it in. The
scorer's fast paths read weights themselves, so its scores must equal transformers' own forward of the plain model, a
sweep must load each checkpoint (the weight switch cannot copy into offloaded weights), and the offload folder must go
with the model. Several GPUs: tests/gpu/test_device_map_cuda.py."""

from __future__ import annotations

import gc
import json
import tempfile
from pathlib import Path

import pytest
from pydantic import ValidationError

import crossknow
from crossknow.errors import CrossknowError
from crossknow.evaluation.api import tensors_hash
from crossknow.evaluation.pipeline import run_evaluate
from crossknow.evaluation.records import EvaluateConfig
from crossknow.models.access import ModelAccess
from crossknow.models.backends.local import llamacpp_decodes
from crossknow.models.generator import GenerateRequest
from crossknow.models.hf_generator import HFGenerator
from crossknow.models.hf_loading import LoadSettings
from crossknow.models.hf_scorer import HFScorer
from crossknow.models.placement import offloaded, parse_max_memory
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
TO_DISK = LoadSettings(device_map="auto", max_memory="cpu=1KiB")
"""Room for no weight on the CPU: accelerate offloads the whole model to disk."""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=3)


def plain_sums(path: Path, scorer: HFScorer) -> list[float]:
    """Each request alone through transformers' forward of the model loaded plainly, log-softmax in float64
    (tests/reference_scoring), on the scorer's token ids."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path).eval()
    return [sum(reference_logprobs(model, *scorer.encode_request(request))[0]) for request in REQUESTS]


def test_offloaded_weights_score_as_the_plain_forward_and_their_folder_goes_with_the_model(tiny, tmp_path,
                                                                                          monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    scorer = HFScorer(str(tiny), device="auto", load=TO_DISK)
    assert set(scorer.model.hf_device_map.values()) == {"disk"} and offloaded(scorer.model)
    assert scorer.model.lm_head.weight.device.type == "meta"  # the logit head reads it through accelerate
    assert scorer.device == "cpu" and type(scorer.decoder).__name__ == "TransformersDecoder"
    got = [result.logprob_sum for result in scorer.score(REQUESTS)]
    assert got == pytest.approx(plain_sums(tiny, scorer), abs=1e-4)
    assert scorer.model.lm_head.weight.device.type == "meta"  # sent back after the projection
    (folder,) = tmp_path.glob("crossknow-offload-*")  # empty here: accelerate reads safetensors in place
    del scorer
    gc.collect()
    assert not folder.exists()


def test_an_offloaded_model_generates_as_the_plain_one(tiny):
    requests = [GenerateRequest(prompt="The capital of France is", max_tokens=12, temperature=0.0),
                GenerateRequest(prompt="東京は", max_tokens=12, temperature=0.0)]
    plain = HFGenerator(str(tiny), device="cpu", prompt_format="completion").generate(requests)
    placed = HFGenerator(str(tiny), device="auto", prompt_format="completion", load=TO_DISK)
    assert offloaded(placed.model)
    texts = [result.text for result in placed.generate(requests)]
    assert texts == [result.text for result in plain] and all(texts)


def test_a_sweep_loads_each_offloaded_checkpoint(tiny, tmp_path):
    """Two checkpoints, the second with its last block changed: the weight switch would copy into meta tensors,
    so each is loaded, and the second scores as its plain forward."""
    first, second = checkpoint_pair(tiny, tmp_path)
    sweep = SweepScorers([f"hf:{first}", f"hf:{second}"], ModelOptions(device_map="auto", max_memory="cpu=1KiB"))
    first_sums = [result.logprob_sum for result in sweep.scorer_for(f"hf:{first}").score(REQUESTS)]
    scorer = sweep.scorer_for(f"hf:{second}")
    swept = [result.logprob_sum for result in scorer.score(REQUESTS)]
    assert sweep.loads == 2 and sweep.prefix is None and offloaded(scorer.model)
    assert swept == pytest.approx(plain_sums(second, scorer), abs=1e-4)
    assert max(abs(a - b) for a, b in zip(swept, first_sums, strict=True)) > 1e-2  # the second checkpoint's own


def test_a_run_records_the_placement_and_refuses_another_on_resume(tiny, tmp_path):
    data, out = str(DEMO_DIR / "items.jsonl"), tmp_path / "run"
    config = EvaluateConfig(model=f"hf:{tiny}", data=data, device_map="auto", max_memory="cpu=1KiB", limit=2)
    run_evaluate(config, out)
    import yaml

    recorded = yaml.safe_load((out / "config.yaml").read_text())["model"]
    assert (recorded["device_map"], recorded["max_memory"]) == ("auto", "cpu=1KiB")
    assert json.loads((out / "model.json").read_text())["model_id"] == str(tiny)  # the same weights, placed
    with pytest.raises(CrossknowError, match=r"model\.device_map: 'auto' -> 'sequential'"):
        run_evaluate(config.model_copy(update={"model": config.model.model_copy(update={"device_map": "sequential"})}),
                     out)


def test_a_model_the_caller_placed_scores_and_hashes_as_the_plain_one(tiny, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny)
    plain = AutoModelForCausalLM.from_pretrained(tiny)
    placed = AutoModelForCausalLM.from_pretrained(tiny, device_map="auto", max_memory={"cpu": "1KiB"},
                                                  offload_folder=str(tmp_path / "offload"))
    assert offloaded(placed)
    assert tensors_hash(placed) == tensors_hash(plain)
    items = str(DEMO_DIR / "items.jsonl")
    ours = crossknow.evaluate(placed, items, tokenizer=tokenizer, limit=3)
    theirs = crossknow.evaluate(plain, items, tokenizer=tokenizer, limit=3)
    assert len(ours) > 0 and ours["loss"].tolist() == pytest.approx(theirs["loss"].tolist(), abs=1e-5)
    placed_bf16 = AutoModelForCausalLM.from_pretrained(tiny, dtype=torch.bfloat16, device_map="auto",
                                                       max_memory={"cpu": "1KiB"},
                                                       offload_folder=str(tmp_path / "offload-bf16"))
    with pytest.raises(CrossknowError, match="pass float32_decisions=False"):
        crossknow.evaluate(placed_bf16, items, tokenizer=tokenizer, limit=3)
    assert len(crossknow.evaluate(placed_bf16, items, tokenizer=tokenizer, limit=3, float32_decisions=False)) > 0


def test_placement_options_are_checked_when_read():
    assert parse_max_memory("0=70GiB, cuda:1=70GiB,cpu=200GiB") == {0: "70GiB", 1: "70GiB", "cpu": "200GiB"}
    with pytest.raises(ValueError, match="got '0=lots'"):
        parse_max_memory("0=lots,cpu=1GiB")
    with pytest.raises(ValueError, match="given twice"):
        parse_max_memory("0=1GiB,cuda:0=2GiB")
    with pytest.raises(ValidationError, match="leave device auto"):
        ModelAccess(device="cpu", device_map="auto")
    with pytest.raises(ValidationError, match="set device_map too"):
        ModelAccess(max_memory="0=10GiB")
    with pytest.raises(ValidationError, match="DEVICE=SIZE"):
        ModelAccess(device_map="auto", max_memory="gpu0=10GiB")
    with pytest.raises(ValidationError):
        ModelAccess(device_map="everywhere")


def test_a_placed_gguf_model_generates_on_transformers():
    assert not llamacpp_decodes(ModelOptions(device="cpu", device_map="auto"))
    with pytest.raises(CrossknowError, match="--device-map auto sets how transformers loads"):
        llamacpp_decodes(ModelOptions(device_map="auto", generator_backend="llamacpp"))
