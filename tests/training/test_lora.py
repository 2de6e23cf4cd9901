"""`crossknow train --lora-rank`: LoRA adapters trained through peft on a tiny random Gemma 3, saved as adapter
checkpoints, and scored merged into their base (crossknow.models.checkpoint_cache.adapter_checkpoint) with the
log-probabilities of peft's own unmerged model."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from crossknow.dynamics.checkpoints import discover_checkpoints
from crossknow.models.protocol import ScoreRequest
from crossknow.models.registry import ModelOptions, load_scorer
from crossknow.training.trainer import run_train
from tests.reference_scoring import reference

from ..gpu.tiny_hf_model import write_tiny_model
from .tiny_run import tiny_config, write_tiny_corpus

peft = pytest.importorskip("peft")
torch = pytest.importorskip("torch")

RANK = 4
ADAPTED_PER_BLOCK = {  # (inputs, outputs) of each linear layer of a block of tests/gpu/tiny_hf_model.py
    "q_proj": (64, 4 * 16), "k_proj": (64, 16), "v_proj": (64, 16), "o_proj": (4 * 16, 64),
    "gate_proj": (64, 128), "up_proj": (64, 128), "down_proj": (128, 64),
}
"""All-linear targets: rank x (inputs + outputs) LoRA parameters each (A is rank x inputs, B outputs x rank)."""
BLOCKS = 4
REQUESTS = [ScoreRequest("The capital of France is", " Paris."), ScoreRequest("Tokyo is the capital", " of Japan.")]


@pytest.fixture(scope="module")
def lora_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the tiny base model, a LoRA run on it: 4 steps at a high learning rate, so that the adapters move)."""
    root = tmp_path_factory.mktemp("lora")
    model = write_tiny_model(root / "model")
    corpus = write_tiny_corpus(root / "corpus.jsonl")
    config = tiny_config(corpus, model=f"hf:{model}", train_layers="all", lora_rank=RANK, learning_rate=1e-2,
                         packing="masked", max_length=140)
    summary = run_train(config, root / "run")
    expected = BLOCKS * sum(RANK * (inputs + outputs) for inputs, outputs in ADAPTED_PER_BLOCK.values())
    assert summary.trainable_parameters == expected  # 15,872: every linear layer of every block, nothing else
    assert summary.checkpoints == [2, 4]
    return model, root / "run"


@pytest.mark.slow
def test_a_lora_checkpoint_holds_the_adapters_and_trace_finds_it(lora_run) -> None:
    model, run = lora_run
    checkpoint = run / "checkpoints" / "checkpoint-4"
    names = {path.name for path in checkpoint.iterdir()}
    assert {"adapter_model.safetensors", "adapter_config.json"} <= names
    assert not names & {"model.safetensors", "config.json"}  # the base's weights are not copied
    found = discover_checkpoints([str(run)])
    assert [(c.step, c.spec) for c in found] == [
        (0, f"hf:{model}"), (2, f"hf:{run / 'checkpoints' / 'checkpoint-2'}"), (4, f"hf:{checkpoint}")]


@pytest.mark.slow
def test_a_merged_adapter_scores_what_peft_computes_unmerged(lora_run, tmp_path: Path, monkeypatch) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    monkeypatch.setenv("CROSSKNOW_CACHE", str(tmp_path))
    model, run = lora_run
    checkpoint = run / "checkpoints" / "checkpoint-4"
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    base = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float64).eval()
    unmerged = peft.PeftModel.from_pretrained(base, str(checkpoint)).eval()  # peft's own forward, adapters apart
    expected = [reference(unmerged, tokenizer, r.context, r.continuation)[0] for r in REQUESTS]
    with unmerged.disable_adapter():
        before = [reference(unmerged, tokenizer, r.context, r.continuation)[0] for r in REQUESTS]

    scored = load_scorer(f"hf:{checkpoint}", ModelOptions(device="cpu")).score(REQUESTS, keep_token_logprobs=True)
    for result, values, base_values in zip(scored, expected, before, strict=True):
        assert result.token_logprobs == pytest.approx(values, abs=1e-4)
        assert max(abs(a - b) for a, b in zip(values, base_values, strict=True)) > 1e-2  # the adapters moved it
    assert len(list(tmp_path.glob("adapter-*/model.safetensors"))) == 1  # merged once, into crossknow's cache


def test_lora_options_need_each_other_and_every_block() -> None:
    with pytest.raises(ValidationError, match="--train-layers must be all"):
        tiny_config(Path("c.jsonl"), lora_rank=8, train_layers="last:1")
    with pytest.raises(ValidationError, match="--lora-alpha and --lora-targets need --lora-rank"):
        tiny_config(Path("c.jsonl"), lora_alpha=16.0, train_layers="all")
