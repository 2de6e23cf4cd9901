"""`hf:ORG/ADAPTER`: a Hub repository that holds a PEFT adapter and no model, loaded as transformers would load a
model: merged into the base its adapter_config.json names (crossknow.models.checkpoint_cache.hub_adapter_checkpoint),
found when the model loads. Checked offline against a Hub-layout cache of a tiny random Gemma 3 and a LoRA on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crossknow.evaluation.pipeline import run_evaluate
from crossknow.evaluation.records import EvaluateConfig
from crossknow.models.hf_scorer import HFScorer
from crossknow.models.protocol import ScoreRequest
from tests.gpu.tiny_hf_model import write_tiny_model
from tests.hub_cache import write_hub_cache
from tests.reference_scoring import reference
from tests.training.tiny_run import DEMO_DIR

peft = pytest.importorskip("peft")
torch = pytest.importorskip("torch")

BASE, ADAPTER = "tiny-org/gemma-base", "tiny-org/gemma-lora"
REQUESTS = [ScoreRequest("The capital of France is", " Paris."), ScoreRequest("東京は日本の首都です。", "大阪は")]


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(the base model's directory, the adapter's): both laid out as Hub repositories in an offline cache, the
    adapter's config naming the base by its Hub id; crossknow's cache in the test's directory."""
    from huggingface_hub import constants
    from transformers import AutoModelForCausalLM

    base = write_tiny_model(tmp_path / "base", seed=5)
    model = AutoModelForCausalLM.from_pretrained(base)
    adapted = peft.get_peft_model(model, peft.LoraConfig(r=4, target_modules="all-linear", init_lora_weights=False))
    adapter = tmp_path / "adapter"
    adapted.save_pretrained(adapter)
    config = json.loads((adapter / "adapter_config.json").read_text())
    (adapter / "adapter_config.json").write_text(json.dumps(config | {"base_model_name_or_path": BASE}))
    cache = tmp_path / "hub"
    write_hub_cache(cache, BASE, {"main": base})
    write_hub_cache(cache, ADAPTER, {"main": adapter})
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("CROSSKNOW_CACHE", str(tmp_path / "crossknow-cache"))
    return base, adapter


def test_a_hub_adapter_scores_as_peft_computes_it_on_its_hub_base(hub, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base, adapter = hub
    tokenizer = AutoTokenizer.from_pretrained(base)
    unmerged = peft.PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base, dtype=torch.float64),
                                              str(adapter)).eval()
    expected = [reference(unmerged, tokenizer, r.context, r.continuation)[0] for r in REQUESTS]
    with unmerged.disable_adapter():
        before = [reference(unmerged, tokenizer, r.context, r.continuation)[0] for r in REQUESTS]
    scored = HFScorer(ADAPTER, device="cpu").score(REQUESTS, keep_token_logprobs=True)
    for result, values, base_values in zip(scored, expected, before, strict=True):
        assert result.token_logprobs == pytest.approx(values, abs=1e-4)
        assert max(abs(a - b) for a, b in zip(values, base_values, strict=True)) > 1e-2  # the adapter moved it
    assert len(list((tmp_path / "crossknow-cache").glob("adapter-*/model.safetensors"))) == 1

    out = tmp_path / "run"
    run_evaluate(EvaluateConfig(model=f"hf:{ADAPTER}", data=str(DEMO_DIR / "items.jsonl"), device="cpu", limit=2), out)
    assert json.loads((out / "model.json").read_text())["model_id"] == ADAPTER
    assert json.loads((out / "metrics.json").read_text())["n_items"]["all"] == 2
