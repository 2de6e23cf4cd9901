"""How a local model loads, set per role (`ModelAccess`): the checkpoint's own dtype, its own modelling code, the
attention kernel; through `evaluate` as a user runs it, on tiny random Gemma 3 models built here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from crossknow.errors import CrossknowError
from crossknow.evaluation.pipeline import run_evaluate
from crossknow.evaluation.records import EvaluateConfig
from crossknow.models.hf_scorer import HFScorer
from crossknow.models.protocol import ScoreRequest
from tests.gpu.tiny_hf_model import write_tiny_model
from tests.training.tiny_run import DEMO_DIR

CONFIGURATION = '''from transformers import Gemma3TextConfig


class ToyConfig(Gemma3TextConfig):
    model_type = "toy_gemma"
'''
MODELING = '''from transformers import Gemma3ForCausalLM

from .configuration_toy import ToyConfig


class ToyForCausalLM(Gemma3ForCausalLM):
    config_class = ToyConfig
'''
PAIRS = [ScoreRequest("The capital of France is", " Paris."), ScoreRequest("東京は日本の首都です。", "大阪は")]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=3)


def sums(scorer: HFScorer) -> list[float]:
    return [result.logprob_sum for result in scorer.score(PAIRS)]


def test_dtype_auto_loads_the_dtype_the_checkpoint_was_saved_in(tiny, tmp_path):
    import torch
    from transformers import Gemma3ForCausalLM

    saved = tmp_path / "bf16"
    Gemma3ForCausalLM.from_pretrained(tiny, dtype=torch.bfloat16).save_pretrained(saved)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (tiny / name).exists():
            shutil.copy(tiny / name, saved / name)
    assert HFScorer(str(saved), dtype="auto", device="cpu").dtype == "bfloat16"
    assert HFScorer(str(tiny), dtype="auto", device="cpu").dtype == "float32"
    out = tmp_path / "run"
    run_evaluate(EvaluateConfig(model=f"hf:{saved}", data=str(DEMO_DIR / "items.jsonl"), dtype="auto", device="cpu",
                                limit=2), out)
    assert json.loads((out / "model.json").read_text())["dtype"] == "bfloat16"
    assert yaml.safe_load((out / "config.yaml").read_text())["model"]["dtype"] == "auto"


def test_a_checkpoint_with_its_own_code_loads_only_when_trusted_and_scores_as_its_weights(tiny, tmp_path):
    remote = tmp_path / "remote"
    shutil.copytree(tiny, remote)
    (remote / "configuration_toy.py").write_text(CONFIGURATION, encoding="utf-8")
    (remote / "modeling_toy.py").write_text(MODELING, encoding="utf-8")
    config = json.loads((remote / "config.json").read_text())
    config |= {"model_type": "toy_gemma", "architectures": ["ToyForCausalLM"],
               "auto_map": {"AutoConfig": "configuration_toy.ToyConfig",
                            "AutoModelForCausalLM": "modeling_toy.ToyForCausalLM"}}
    (remote / "config.json").write_text(json.dumps(config), encoding="utf-8")
    refusal = r"cannot load model .* ships its own modelling code: --trust-remote-code runs it"
    with pytest.raises(CrossknowError, match=refusal):
        HFScorer(str(remote), device="cpu")
    trusted = HFScorer(str(remote), device="cpu", load=_load(trust_remote_code=True))
    assert type(trusted.model).__name__ == "ToyForCausalLM"
    assert sums(trusted) == pytest.approx(sums(HFScorer(str(tiny), device="cpu")), abs=1e-5)


def test_the_attention_kernels_agree_and_an_evaluation_records_the_one_it_ran(tiny, tmp_path):
    eager = HFScorer(str(tiny), device="cpu", load=_load(attn_implementation="eager"))
    sdpa = HFScorer(str(tiny), device="cpu", load=_load(attn_implementation="sdpa"))
    assert eager.model.config._attn_implementation == "eager" and sdpa.model.config._attn_implementation == "sdpa"
    assert sums(eager) == pytest.approx(sums(sdpa), abs=1e-4)
    data, out = str(DEMO_DIR / "items.jsonl"), tmp_path / "run"
    run_evaluate(EvaluateConfig(model=f"hf:{tiny}", data=data, attn_implementation="eager", device="cpu", limit=2),
                 out)
    with pytest.raises(CrossknowError, match=r"model\.attn_implementation: 'eager' -> 'sdpa'"):
        run_evaluate(EvaluateConfig(model=f"hf:{tiny}", data=data, attn_implementation="sdpa", device="cpu",
                                    limit=2), out)


def _load(**settings):
    from crossknow.models.hf_loading import LoadSettings

    return LoadSettings(**settings)
