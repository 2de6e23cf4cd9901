"""`run_train` on the real embedded model: the shared tiny run (tests/training/tiny_run.py), its files, its
weights, rerunning it; a kill -9 in the middle of the command followed by a resume, on a random Gemma 3."""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from pydantic import ValidationError

from crossknow.errors import CrossknowError
from crossknow.models.protocol import ScoreRequest
from crossknow.models.registry import ModelOptions, load_scorer
from crossknow.training.callbacks import RESUME_FILES, complete_checkpoints
from crossknow.training.frozen_shard import FROZEN_FILE, INDEX_FILE, TRAINED_FILE
from crossknow.training.records import PartTokens, TrainConfig, TrainSummary
from crossknow.training.trainer import (
    SUMMARY_FILE,
    TRAIN_LOG_SCHEMA,
    gradient_accumulation,
    model_source,
    run_train,
)

from ..processes import run_until_then_kill
from .tiny_run import TINY_SETTINGS, TINY_TOKENS, TinyTrainRun, checkpoint_tensors, tiny_cli_args, tiny_config

pytest.importorskip("transformers")
safetensors_torch = pytest.importorskip("safetensors.torch")
torch = pytest.importorskip("torch")

TRAINED_PREFIXES = ("model.layers.17.", "model.norm.")
"""Tensors that `last:1` trains in Gemma 3 270M (18 blocks, numbered 0-17)."""


def tensors(path: Path) -> dict[str, Any]:
    """Every tensor of a safetensors file."""
    return safetensors_torch.load_file(str(path))


def sha256(path: Path) -> str:
    """Hex SHA-256 of a file."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def documents(corpus: Path) -> list[dict[str, Any]]:
    """The corpus' records."""
    return [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]


def test_the_run_directory(tiny_train_run: TinyTrainRun) -> None:
    out, summary = tiny_train_run.out, tiny_train_run.summary
    saved = yaml.safe_load((out / "config.yaml").read_text(encoding="utf-8"))
    assert saved == tiny_train_run.config.model_dump()
    assert json.loads((out / "inputs.json").read_text(encoding="utf-8")) == {
        str(tiny_train_run.corpus): sha256(tiny_train_run.corpus)}
    texts = [json.loads(line) for line in (out / "train_data.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted(t["text"] for t in texts) == sorted(d["text"] for d in documents(tiny_train_run.corpus))
    assert {t["kind"] for t in texts} == {"document"}
    # No budget; packing none cuts each text at max_length, and train_data.jsonl says so.
    assert all(t["tokens"] == TINY_SETTINGS["max_length"] for t in texts)
    assert sum(t["full_tokens"] for t in texts) == TINY_TOKENS

    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["checkpoint-2", "checkpoint-4"]
    assert TrainSummary.model_validate_json((out / SUMMARY_FILE).read_text(encoding="utf-8")) == summary
    assert summary.steps == 4 and summary.checkpoints == [2, 4]
    assert summary.examples == {"knowledge/document": 6}
    cut_tokens = 6 * TINY_SETTINGS["max_length"]
    assert summary.parts == {"knowledge": PartTokens(texts_built=6, tokens_built=cut_tokens, budget=None, texts=6,
                                                     tokens=cut_tokens, cut=0)}
    assert summary.sequences == 6
    assert summary.qa is None


def test_the_parameter_counts_match_the_saved_weights(tiny_train_run: TinyTrainRun, embedded_checkpoint_dir: Path):
    weights = checkpoint_tensors(tiny_train_run.out / "checkpoints" / "checkpoint-4")
    assert tiny_train_run.summary.total_parameters == sum(t.numel() for t in weights.values())
    trained = sum(t.numel() for name, t in weights.items() if name.startswith(TRAINED_PREFIXES))
    assert tiny_train_run.summary.trainable_parameters == trained


def test_the_step_log(tiny_train_run: TinyTrainRun, embedded_scorer: Any) -> None:
    table = pq.read_table(tiny_train_run.out / "train_log.parquet")
    assert table.schema == TRAIN_LOG_SCHEMA
    rows = table.to_pylist()
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    assert all(math.isfinite(r["loss"]) and r["loss"] > 0 for r in rows)
    assert all(math.isfinite(r["grad_norm"]) and r["grad_norm"] > 0 for r in rows)
    # Cosine decay from the peak to min_learning_rate over 4 steps, no warm-up; step s trains at the
    # rate of progress (s - 1) / 4.
    peak, low = TINY_SETTINGS["learning_rate"], tiny_train_run.config.min_learning_rate
    for r in rows:
        expected = low + (peak - low) * 0.5 * (1 + math.cos(math.pi * (r["step"] - 1) / 4))
        assert r["learning_rate"] == pytest.approx(expected, rel=1e-6), r
    # Every document is longer than max_length tokens (with BOS and EOS), so each step sees 2 x 48.
    tokenizer = embedded_scorer.tokenizer
    lengths = [len(tokenizer(d["text"])["input_ids"]) + 1 for d in documents(tiny_train_run.corpus)]
    assert sum(lengths) == TINY_TOKENS and min(lengths) > TINY_SETTINGS["max_length"]
    per_step = TINY_SETTINGS["batch_size"] * TINY_SETTINGS["max_length"]
    assert [r["tokens"] for r in rows] == [per_step * r["step"] for r in rows]
    assert tiny_train_run.summary.tokens_seen == 4 * per_step


def test_checkpoints_hold_a_model_and_no_resume_state(tiny_train_run: TinyTrainRun) -> None:
    for step in (2, 4):
        path = tiny_train_run.out / "checkpoints" / f"checkpoint-{step}"
        names = {p.name for p in path.iterdir()}
        assert {"config.json", INDEX_FILE, FROZEN_FILE, TRAINED_FILE, "tokenizer.json", "trainer_state.json"} <= names
        assert "model.safetensors" not in names  # transformers would read it alone, not the index
        assert not names & set(RESUME_FILES), (step, names)  # a finished run keeps no optimizer state
        assert json.loads((path / "trainer_state.json").read_text(encoding="utf-8"))["global_step"] == step
        trained = tensors(path / TRAINED_FILE)
        assert sorted(trained) == sorted(name for name in checkpoint_tensors(path) if name.startswith(TRAINED_PREFIXES))
    assert list(complete_checkpoints(tiny_train_run.out / "checkpoints")) == [2, 4]
    # One file of the frozen weights on disk, linked into both checkpoints.
    frozen = [tiny_train_run.out / "checkpoints" / f"checkpoint-{step}" / FROZEN_FILE for step in (2, 4)]
    assert frozen[0].stat().st_ino == frozen[1].stat().st_ino and frozen[0].stat().st_nlink == 2


def test_a_checkpoint_loads_in_transformers_as_its_files_hold_it(tiny_train_run: TinyTrainRun) -> None:
    from transformers import AutoModelForCausalLM

    path = tiny_train_run.out / "checkpoints" / "checkpoint-4"
    loaded = AutoModelForCausalLM.from_pretrained(path).state_dict()
    saved = checkpoint_tensors(path)
    assert set(saved) == set(loaded) - {"lm_head.weight"}  # the output layer is the tied embedding
    assert all(torch.equal(loaded[name], tensor) for name, tensor in saved.items())


def test_frozen_weights_are_the_base_models_and_the_trained_block_moved(
    tiny_train_run: TinyTrainRun, embedded_checkpoint_dir: Path
) -> None:
    base = tensors(embedded_checkpoint_dir / "model.safetensors")
    final = checkpoint_tensors(tiny_train_run.out / "checkpoints" / "checkpoint-4")
    middle = checkpoint_tensors(tiny_train_run.out / "checkpoints" / "checkpoint-2")
    assert final.keys() == base.keys() == middle.keys()
    trained = [name for name in base if name.startswith(TRAINED_PREFIXES)]
    assert len(trained) == 14
    for name in base:
        if name in trained:
            assert not torch.equal(final[name], base[name]), name
            assert not torch.equal(final[name], middle[name]), name
        else:
            assert torch.equal(final[name], base[name]), name
            assert torch.equal(middle[name], base[name]), name


def test_a_checkpoint_loads_in_crossknows_scorer_and_learned_the_documents(
    tiny_train_run: TinyTrainRun, embedded_scorer: Any
) -> None:
    # The first sentence of each training text: well inside the 48 tokens the run trained on.
    requests = [ScoreRequest("", d["text"].split(". ")[0] + ".") for d in documents(tiny_train_run.corpus)]
    trained = load_scorer(f"hf:{tiny_train_run.out / 'checkpoints' / 'checkpoint-4'}",
                          ModelOptions(device="cpu", batch_size=6))
    after, before = trained.score(requests), embedded_scorer.score(requests)
    assert [r.n_tokens for r in after] == [r.n_tokens for r in before]  # the same tokenizer was saved
    mean_loss = [sum(-r.logprob_sum / r.n_tokens for r in results) / len(results) for results in (before, after)]
    # Measured with this config: 5.40 before, 2.71 after (4 steps at 1e-3 on these very texts).
    assert mean_loss[1] < mean_loss[0] - 0.5, mean_loss


def test_running_again_on_a_finished_directory_returns_its_summary(tiny_train_run: TinyTrainRun,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A finished run is read back, never trained again: neither the Trainer's arguments nor the model are made
    (a check of what runs, where a clock would only compare two durations), and no file is rewritten."""
    from crossknow.models import hf_loading
    from crossknow.training import trainer

    def no_training(*_args: Any, **_kwargs: Any) -> None:
        pytest.fail("a finished run directory began a training run")

    monkeypatch.setattr(trainer, "hf_training_arguments", no_training)
    monkeypatch.setattr(hf_loading, "load_causal_lm", no_training)
    out = tiny_train_run.out
    watched = [out / "train_log.jsonl", out / "train_log.parquet", out / SUMMARY_FILE,
               *(out / "checkpoints").glob("checkpoint-*/*.safetensors")]
    before = {path: path.stat().st_mtime_ns for path in watched}
    again = run_train(tiny_train_run.config, out)
    assert again == tiny_train_run.summary  # `seconds` included: the saved record, not a new run
    assert {path: path.stat().st_mtime_ns for path in watched} == before
    # The device may change on resume; it cannot change the numbers.
    assert run_train(tiny_config(tiny_train_run.corpus, device="auto"), out) == tiny_train_run.summary


@pytest.mark.parametrize(("field", "value"), [("learning_rate", 2e-3), ("max_steps", 6), ("train_layers", "last:2")])
def test_another_config_on_the_same_directory_is_refused(tiny_train_run: TinyTrainRun, field: str, value: Any) -> None:
    config_file = tiny_train_run.out / "config.yaml"
    before = config_file.read_bytes()
    with pytest.raises(CrossknowError, match=rf"another config \({field}: "):
        run_train(tiny_config(tiny_train_run.corpus, **{field: value}), tiny_train_run.out)
    assert config_file.read_bytes() == before


def test_config_validation() -> None:
    base = {"model": "default", "corpus": "c.jsonl", "langs": ["en"]}
    for spec in ("last:x", "last:0", "first:1", "everything"):
        with pytest.raises(ValidationError, match="train_layers"):
            TrainConfig(**base, train_layers=spec)
    assert TrainConfig(**base, train_layers="last:3").train_layers == "last:3"
    with pytest.raises(ValidationError, match="together"):
        TrainConfig(**base, transfer_corpus="t.jsonl")
    with pytest.raises(ValidationError, match="not both"):
        TrainConfig(**base, save_every_steps=2, save_every_tokens=100)
    with pytest.raises(ValidationError, match="recipe"):
        TrainConfig(**base, recipe="poems")
    with pytest.raises(ValidationError, match="not a multiple of --micro-batch-size 3"):
        TrainConfig(**base, batch_size=32, micro_batch_size=3)
    with pytest.raises(ValidationError, match="--tokens-transfer needs --transfer-corpus"):
        TrainConfig(**base, tokens_transfer=100)
    with pytest.raises(ValidationError, match="packing"):
        TrainConfig(**base, packing="greedy")


def test_the_defaults_are_the_papers() -> None:
    """Appendix A.4.2: learning rate 2e-5 down to 2e-6, weight decay 0.1, clipping 1.0, micro-batch 1, global batch
    32, sequence length 4096; section 6.1(3): one epoch."""
    config = TrainConfig(model="default", corpus="c.jsonl")
    assert (config.learning_rate, config.min_learning_rate, config.weight_decay, config.max_grad_norm) == (
        2e-5, 2e-6, 0.1, 1.0)
    assert (config.batch_size, config.micro_batch_size, config.max_length, config.epochs) == (32, 1, 4096, 1.0)
    assert config.packing == "masked"
    assert (config.tokens_knowledge, config.tokens_transfer) == (None, None)


def test_the_instruction_recipe_asks_for_a_question_answer_generator() -> None:
    base = {"model": "default", "corpus": "c.jsonl", "recipe": "instruction"}
    with pytest.raises(ValidationError, match="needs --qa-generator"):
        TrainConfig(**base)
    assert TrainConfig(**base, qa_pairs=0).asks_qa_pairs is False  # the regex half alone: crossknow's option
    assert TrainConfig(**base, qa_generator="default").asks_qa_pairs is True
    with pytest.raises(ValidationError, match="'openai:m' needs a server: .* or pass --qa-base-url URL"):
        TrainConfig(**base, qa_generator="openai:m")
    with pytest.raises(ValidationError, match="--qa-generator: unknown generator spec"):
        TrainConfig(**base, qa_generator="gpt-4")
    with pytest.raises(ValidationError, match="used only by --recipe instruction"):
        TrainConfig(model="default", corpus="c.jsonl", qa_generator="default")


def test_gradient_accumulation_makes_up_the_global_batch() -> None:
    config = TrainConfig(model="default", corpus="c.jsonl", batch_size=32, micro_batch_size=2)
    assert gradient_accumulation(config, 1) == 16
    assert gradient_accumulation(config, 4) == 4  # 4 processes x 2 sequences x 4 passes = 32
    with pytest.raises(CrossknowError, match="--batch-size 32 is not a multiple of --micro-batch-size 2 x 3"):
        gradient_accumulation(config, 3)


def test_model_source(embedded_checkpoint_dir: Path) -> None:
    assert model_source("default") == (str(embedded_checkpoint_dir), None)
    assert model_source("hf:org/model@step100") == ("org/model", "step100")
    assert model_source("hf:/models/x") == ("/models/x", None)
    for spec in ("gguf:model.gguf", "openai:gpt", "hf:"):
        with pytest.raises(CrossknowError, match="default or hf:"):
            model_source(spec)


@pytest.mark.slow
def test_kill_9_in_the_middle_then_resume_gives_the_uninterrupted_weights(
    random_train_run: TinyTrainRun, tmp_path: Path
) -> None:
    """The command is killed while it writes its final checkpoint (after checkpoint-2 is complete), then run
    again. The reference is the shared run on the same random model: the same config, never interrupted (its
    checkpoints take about half a second to save, time enough for the kill to land inside one)."""
    reference = random_train_run
    out = tmp_path / "run"
    command = [sys.executable, "-m", "crossknow", *tiny_cli_args(reference.corpus, out, reference.config.model)]
    final = out / "checkpoints" / "checkpoint-4"
    run_until_then_kill(command, tmp_path, tmp_path / "killed.log", final.exists, 400, "checkpoint-4 begun")
    assert not (final / "trainer_state.json").exists(), "the kill must land while checkpoint-4 is being saved"
    assert list(complete_checkpoints(out / "checkpoints")) == [2]
    assert all((out / "checkpoints" / "checkpoint-2" / name).exists() for name in RESUME_FILES[:2])
    assert not (out / SUMMARY_FILE).exists()

    resumed = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=400)
    assert resumed.returncode == 0, resumed.stderr
    assert f"4 steps, {reference.summary.tokens_seen} tokens, 2 checkpoints" in resumed.stdout

    summary = TrainSummary.model_validate_json((out / SUMMARY_FILE).read_text(encoding="utf-8"))
    assert (summary.steps, summary.tokens_seen, summary.checkpoints) == (4, reference.summary.tokens_seen, [2, 4])
    rows = pq.read_table(out / "train_log.parquet").to_pylist()
    reference_rows = pq.read_table(reference.out / "train_log.parquet").to_pylist()
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    for row, ref in zip(rows, reference_rows, strict=True):
        assert row["loss"] == pytest.approx(ref["loss"], abs=1e-5), row
        assert row["tokens"] == ref["tokens"]
    for step in (2, 4):
        weights = checkpoint_tensors(out / "checkpoints" / f"checkpoint-{step}")
        expected = checkpoint_tensors(reference.out / "checkpoints" / f"checkpoint-{step}")
        assert weights.keys() == expected.keys()
        # Bit-identical on the embedded model when measured (the Trainer restores the optimizer, scheduler, RNG
        # and data position). 1e-6 leaves room only for a different CPU's reduction order, far below what one
        # step at this learning rate moves these weights (checked: the trained block differs between steps).
        for name, tensor in weights.items():
            assert torch.allclose(tensor, expected[name], rtol=0, atol=1e-6), (step, name)
    trained = "model.layers.3.self_attn.q_proj.weight"
    assert not torch.allclose(checkpoint_tensors(out / "checkpoints" / "checkpoint-2")[trained],
                              checkpoint_tensors(out / "checkpoints" / "checkpoint-4")[trained], atol=1e-6)
