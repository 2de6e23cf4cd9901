"""`crossknow pitfalls finetune` end to end: SFT and DPO on released Japanese pairs, the evaluations before and
after, Table 2 recomputed from the per-pair rows, resume (a random Gemma 3 in CI, the embedded model nightly)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from crossknow.models.weights import weight_files
from crossknow.pitfalls.finetune.records import PitfallsFinetuneConfig
from crossknow.pitfalls.finetune.run import run_pitfalls_finetune
from crossknow.report.pitfalls_finetune_report import write_finetune_report
from crossknow.store.models_file import read_models

from ..conftest import SHARED_DATA

RELEASE = SHARED_DATA / "cross-lingual-pitfalls"
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not RELEASE.exists(), reason=f"{RELEASE} is not present")]

TINY = {"max_steps": 1, "batch_size": 1, "warmup_ratio": 0.0, "train_layers": "last:1", "device": "cpu",
        "answering": "loss"}
"""A tiny training (one optimizer step of one example, the last decoder block) so that the test runs on a CPU;
no warm-up, since the first step of a warm-up has learning rate 0 and would change nothing."""


def _target_accuracy(directory) -> dict[str, bool]:
    """pair id -> target-language correctness, read from an evaluation's pairs.parquet."""
    return {row["pair_id"]: row["target_correct"] for row in pq.read_table(directory / "pairs.parquet").to_pylist()}


BASES = ["tiny", pytest.param("default", marks=[pytest.mark.nightly, pytest.mark.model])]
"""The tiny random Gemma 3 of tests/gpu/tiny_hf_model.py in CI (the machinery: its answers are as right or wrong as
chance makes them), the embedded model nightly."""


def base_model(base: str, tmp_path, positions: int = 512) -> tuple[Path, int, str]:
    """(weights directory, index of its last decoder block, model spec) of `base`; the tiny model with
    `positions` positions."""
    if base == "tiny":
        from ..gpu.tiny_hf_model import write_tiny_model

        weights = write_tiny_model(tmp_path / "model", positions=positions)
        return weights, 3, f"hf:{weights}"
    from crossknow.models.checkpoint_cache import embedded_checkpoint

    return embedded_checkpoint(), 17, "default"


@pytest.mark.parametrize("base", BASES)
def test_sft_run_reports_table_2_from_the_two_evaluations_and_resumes(base, tmp_path):
    # 4,096 positions: every pair fits the tiny model, whose byte-level tokenizer spends several tokens on one
    # Japanese character, so that loss answering leaves no pair invalid
    _, _, model = base_model(base, tmp_path, positions=4096)
    out = tmp_path / "sft"
    config = PitfallsFinetuneConfig(model=model, train_pairs=str(RELEASE / "Japanese.json"), limit=5,
                                    validation_fraction=0.2, eval_pairs=[str(RELEASE / "French.json")], eval_limit=1,
                                    **TINY)
    metrics = run_pitfalls_finetune(config, out)

    checkpoint = out / metrics.training.checkpoint
    assert (checkpoint / "config.json").exists() and weight_files(checkpoint)
    assert not (checkpoint / "optimizer.pt").exists()  # a finished run keeps no resume state
    examples = [json.loads(line) for line in (out / "train" / "examples.jsonl").read_text().splitlines()]
    assert [e["split"] for e in examples].count("validation") == 1 and len(examples) == 5  # 20% of 5
    assert (metrics.training.train_examples, metrics.training.validation_examples, metrics.training.steps) == (4, 1, 1)
    raw = json.loads((RELEASE / "Japanese.json").read_text(encoding="utf-8"))
    assert examples[0]["target"] == " " + raw[0]["transanswer"]  # the correct answer, as the lm-eval continuation

    assert [(row.lang, row.role) for row in metrics.rows] == [("ja", "training"), ("ja", "held-out"),
                                                             ("fr", "evaluation")]
    for row, stem, held in ((metrics.rows[0], "Japanese", None), (metrics.rows[1], "Japanese", "validation"),
                            (metrics.rows[2], "French", None)):
        before, after = _target_accuracy(out / "eval/base" / stem), _target_accuracy(out / "eval/tuned" / stem)
        ids = [e["pair_id"] for e in examples if e["split"] == held] if held else list(before)
        assert set(after) == set(before) and row.n_pairs == len(ids) == row.n_compared  # loss answering: all valid
        original = sum(before[i] for i in ids) / len(ids)
        enhanced = sum(after[i] for i in ids) / len(ids)
        assert (row.original, row.enhanced) == pytest.approx((original, enhanced))
        assert row.diff == pytest.approx(enhanced - original)
    assert metrics.rows[0].n_pairs == 5 and metrics.rows[2].n_pairs == 1
    # the run's models.json records the two models that scored its evaluations: the base model, then the tuned one
    assert list(read_models(out)) == [f"{model} (scorer)", f"hf:{checkpoint} (scorer)"]

    page = write_finetune_report(out).read_text(encoding="utf-8")
    assert 'id="table-finetune"' in page and 'id="fig-pitfalls_finetune_diff"' in page
    assert (out / "figures" / "pitfalls_finetune_diff.png").stat().st_size > 0

    log = (out / "train" / "train_log.jsonl").read_text()
    again = run_pitfalls_finetune(config, out)  # finished stages are skipped: nothing is trained twice
    assert again.rows == metrics.rows and again.training == metrics.training
    assert (out / "train" / "train_log.jsonl").read_text() == log
    shutil.rmtree(out / "train" / "checkpoints")  # 1 GB: the suite's disk footprint


@pytest.mark.parametrize("base", BASES)
def test_dpo_run_trains_away_from_the_base_models_wrong_answers(base, tmp_path):
    from safetensors import safe_open

    weights, last_block, model = base_model(base, tmp_path)
    out = tmp_path / "dpo"
    config = PitfallsFinetuneConfig(model=model, train_pairs=str(RELEASE / "Japanese.json"), limit=4, method="dpo",
                                    validation_fraction=0.0, **TINY)
    metrics = run_pitfalls_finetune(config, out)

    base_rows = pq.read_table(out / "eval/base/Japanese/pairs.parquet").to_pylist()
    wrong = [row for row in base_rows if row["target_correct"] is False]
    right = [row for row in base_rows if row["target_correct"] is True]
    counts = metrics.preference
    # an answer the model cannot score is invalid: on the tiny model, one of these four questions is longer than its
    # 512 positions in its 1,024-word tokenizer
    assert (counts.pairs, counts.with_rejected, counts.right, counts.invalid) == (
        4, len(wrong), len(right), 4 - len(wrong) - len(right))
    assert wrong, "DPO needs a wrong answer to train away from"
    raw = json.loads((RELEASE / "Japanese.json").read_text(encoding="utf-8"))
    triples = [json.loads(line) for line in (out / "train" / "examples.jsonl").read_text().splitlines()]
    for triple, row in zip(triples, wrong, strict=True):
        record = raw[int(row["pair_id"].split(":")[1])]
        assert triple["chosen"] == " " + record["transanswer"]
        assert triple["rejected"] == " " + record["transchoices"][row["target_choice"]]

    tuned = out / metrics.training.checkpoint / "model.safetensors"
    with safe_open(tuned, "pt") as after, safe_open(weights / "model.safetensors", "pt") as before:
        changed = {name for name in after.keys() if not after.get_tensor(name).equal(before.get_tensor(name))}
    assert changed and all(name.startswith(f"model.layers.{last_block}.") or name == "model.norm.weight"
                           for name in changed)
    shutil.rmtree(out / "train" / "checkpoints")  # 1 GB: the suite's disk footprint


def test_lora_sft_evaluates_the_adapters_merged_into_the_base(tmp_path):
    """`--lora-rank`: the checkpoint holds the adapters alone, and the tuned evaluation scores them merged into the
    base (crossknow.models.checkpoint_cache.adapter_checkpoint; tests/training/test_lora.py checks the merged
    numbers against peft's)."""
    _, _, model = base_model("tiny", tmp_path, positions=4096)
    out = tmp_path / "lora"
    config = PitfallsFinetuneConfig(model=model, train_pairs=str(RELEASE / "Japanese.json"), limit=3,
                                    validation_fraction=0.0, lora_rank=4, learning_rate=1e-2,
                                    **{**TINY, "train_layers": "all"})
    metrics = run_pitfalls_finetune(config, out)

    checkpoint = out / metrics.training.checkpoint
    assert (checkpoint / "adapter_model.safetensors").exists() and not (checkpoint / "model.safetensors").exists()
    assert metrics.training.trainable_parameters == 15_872  # rank 4 on every linear layer (tests/training/test_lora.py)
    models = read_models(out)
    assert list(models) == [f"{model} (scorer)", f"hf:{checkpoint} (scorer)"]
    assert models[f"hf:{checkpoint} (scorer)"]["model"] == f"hf:{model[3:]} + PEFT adapter {checkpoint}"
    assert len(pq.read_table(out / "eval/tuned/Japanese/pairs.parquet")) == 3
