"""crossknow's commands on a CUDA device give the CPU's numbers (skipped where no CUDA device is present).

Every command reaches CUDA through `--device auto|cuda`; the CPU machines of CI never do, so these tests
are the only check of that path. Each runs the real command line (or the real class) on the tiny model
of tests/gpu/tiny_hf_model.py twice, on the GPU and on the CPU, and compares:

- the fast scoring paths (shared prefix, frozen blocks) against a plain forward, on the GPU;
- `evaluate` in float32: the same log-probabilities within lm-eval's tolerance (1e-3 + 1e-5 |sum|), the
  same predictions; in bfloat16 and float16 with float32 decisions: the CPU's float32 accuracy exactly;
- `train` then `trace`: the same training losses and trace losses, checkpoints written and read on the GPU;
  bfloat16 mixed-precision training: the float32 losses within 2%;
- the hf generator: the same greedy text, and seeded sampling that repeats.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import torch

from tests.cli.test_train_trace_cli import crossknow as run_cli
from tests.gpu.tiny_hf_model import write_tiny_model
from tests.training.tiny_run import tiny_cli_args, write_items, write_tiny_corpus

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


def crossknow(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The real command line in a fresh interpreter (tests/cli's runner); fails the test on a non-zero exit."""
    result = run_cli(*args, cwd=cwd, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    return result


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny_hf") / "model")


@pytest.fixture(scope="module")
def items(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All 24 demo items (6 facts x en/ja x cloze/question)."""
    return write_items(tmp_path_factory.mktemp("items") / "items.jsonl", 24)


def test_the_fast_scoring_paths_equal_a_plain_forward_on_cuda():
    from crossknow.models.scoring_check import TOLERANCE, ByteTokenizer, path_differences, tiny_sliding_model

    differences = path_differences(ByteTokenizer(), tiny_sliding_model().to("cuda"))
    assert set(differences) == {"shared-prefix", "frozen-blocks"}
    assert all(value <= TOLERANCE for value in differences.values()), differences


def evaluate(model: Path, items: Path, out: Path, *options: str) -> tuple[pd.DataFrame, dict]:
    """(scores.parquet, metrics.json) of `crossknow evaluate` on the tiny model with `options`."""
    crossknow("evaluate", "--model", f"hf:{model}", "--data", str(items), "--out", str(out), *options, cwd=out.parent)
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    return pd.read_parquet(out / "scores.parquet"), metrics


def best_options(scores: pd.DataFrame) -> pd.Series:
    """item_id -> the option with the highest summed log-probability."""
    return scores.loc[scores.groupby("item_id")["logprob_sum"].idxmax()].set_index("item_id")["option_index"]


def test_evaluate_on_cuda_gives_the_cpus_numbers(tiny_model: Path, items: Path, tmp_path: Path):
    cpu, cpu_metrics = evaluate(tiny_model, items, tmp_path / "cpu", "--device", "cpu", "--dtype", "float32")
    cuda, cuda_metrics = evaluate(tiny_model, items, tmp_path / "cuda", "--device", "cuda", "--dtype", "float32")
    assert len(cpu) == len(cuda) == 96 and cpu_metrics["n_items"]["all"] == 24
    assert (cpu[["item_id", "option_index", "n_tokens"]] == cuda[["item_id", "option_index", "n_tokens"]]).all().all()
    gap = (cpu["logprob_sum"] - cuda["logprob_sum"]).abs()
    assert (gap <= 1e-3 + 1e-5 * cpu["logprob_sum"].abs()).all(), gap.max()
    assert cuda_metrics["accuracy"] == cpu_metrics["accuracy"]
    assert (best_options(cpu) == best_options(cuda)).all()

    # bfloat16 with float32 decisions (the default with --dtype bfloat16): float32's predictions, on the GPU.
    bf16, bf16_metrics = evaluate(tiny_model, items, tmp_path / "bf16", "--device", "auto", "--dtype", "bfloat16")
    assert bf16_metrics["model"]["dtype"] == "bfloat16"
    assert bf16_metrics["accuracy"] == cpu_metrics["accuracy"]
    assert 0 <= bf16_metrics["items_rescored_float32"] <= 24
    bf16_gap = (cpu["logprob_sum"] - bf16["logprob_sum"]).abs()
    assert bf16_gap.max() > gap.max()  # it did compute in bfloat16

    fp16, fp16_metrics = evaluate(tiny_model, items, tmp_path / "fp16", "--device", "cuda", "--dtype", "float16")
    assert fp16_metrics["model"]["dtype"] == "float16"
    assert fp16_metrics["accuracy"] == cpu_metrics["accuracy"]
    print("items rescored in float32 of 24: bfloat16", bf16_metrics["items_rescored_float32"],
          "float16", fp16_metrics["items_rescored_float32"], "; largest gap to the CPU's float32 sums:",
          f"float32 {gap.max():.2e}, bfloat16 {bf16_gap.max():.2e}, "
          f"float16 {(cpu['logprob_sum'] - fp16['logprob_sum']).abs().max():.2e}")


def train(model: Path, corpus: Path, root: Path, device: str, dtype: str = "float32") -> pd.DataFrame:
    """train_log.parquet of the tiny training run (tests/training/tiny_run.py) on `model`, on `device` in `dtype`,
    into root/run."""
    root.mkdir()
    # the options given last win over tiny_cli_args' own --device
    crossknow(*tiny_cli_args(corpus, root / "run", f"hf:{model}"), "--device", device, "--dtype", dtype, cwd=root)
    return pd.read_parquet(root / "run" / "train_log.parquet")


def trace(items: Path, root: Path, device: str) -> pd.DataFrame:
    """trace.parquet of `crossknow trace` over root/run's base model and checkpoints on `items`, on `device`."""
    crossknow("trace", "--checkpoints", str(root / "run"), "--data", str(items), "--out", str(root / "trace"),
              "--device", device, "--batch-size", "4", cwd=root)
    return pd.read_parquet(root / "trace" / "trace.parquet")


def test_train_and_trace_on_cuda_give_the_cpus_numbers(tiny_model: Path, tmp_path: Path):
    corpus = write_tiny_corpus(tmp_path / "corpus.jsonl")
    items = write_items(tmp_path / "items.jsonl", 8)
    cpu_log = train(tiny_model, corpus, tmp_path / "cpu", "cpu")
    cuda_log = train(tiny_model, corpus, tmp_path / "cuda", "cuda")
    cpu_trace, cuda_trace = trace(items, tmp_path / "cpu", "cpu"), trace(items, tmp_path / "cuda", "cuda")

    assert list(cuda_log["step"]) == list(cpu_log["step"]) == [1, 2, 3, 4]
    assert list(cuda_log["tokens"]) == list(cpu_log["tokens"])
    assert all(math.isfinite(loss) for loss in cuda_log["loss"])
    assert cuda_log["loss"].tolist() == pytest.approx(cpu_log["loss"].tolist(), rel=1e-4)
    assert cuda_log["loss"].iloc[-1] < cuda_log["loss"].iloc[0]  # it learned

    keys = ["step", "set", "item_id", "option_index"]
    merged = cpu_trace.merge(cuda_trace, on=keys, suffixes=("_cpu", "_cuda"))
    assert len(merged) == len(cpu_trace) == len(cuda_trace) == 3 * 8 * 4  # steps 0, 2, 4
    assert (merged["loss_cpu"] - merged["loss_cuda"]).abs().max() < 1e-3
    moved = merged.groupby("step")["loss_cuda"].sum()
    assert moved[4] != pytest.approx(moved[0], abs=1e-3)  # the checkpoints were read, not the base model thrice

    # bfloat16 mixed precision (float32 master weights) on the GPU: the same run within bfloat16's rounding.
    bf16_log = train(tiny_model, corpus, tmp_path / "bf16", "cuda", "bfloat16")
    assert list(bf16_log["tokens"]) == list(cpu_log["tokens"])
    assert bf16_log["loss"].tolist() == pytest.approx(cpu_log["loss"].tolist(), rel=2e-2)
    assert bf16_log["loss"].tolist() != pytest.approx(cpu_log["loss"].tolist(), rel=1e-6)  # it ran in bfloat16
    print("training losses: cpu float32", cpu_log["loss"].tolist(), "cuda float32", cuda_log["loss"].tolist(),
          "cuda bfloat16", bf16_log["loss"].tolist())


def test_the_hf_generator_on_cuda_gives_the_cpus_greedy_text(tiny_model: Path):
    from crossknow.models.generator import GenerateRequest
    from crossknow.models.hf_generator import HFGenerator

    prompts = ["Velmorastin inhibits the enzyme", "ベルモラスチンは", "The capital of", "In cultured liver cells,"]
    greedy = [GenerateRequest(prompt=prompt, max_tokens=16) for prompt in prompts]
    cpu = HFGenerator(str(tiny_model), device="cpu", dtype="float32")
    cuda = HFGenerator(str(tiny_model), device="cuda", dtype="float32")
    assert str(next(cuda.model.parameters()).device).startswith("cuda")
    cpu_texts = [result.text for result in cpu.generate(greedy)]
    assert all(cpu_texts)
    assert [result.text for result in cuda.generate(greedy)] == cpu_texts

    sampled = [GenerateRequest(prompt=prompt, max_tokens=16, temperature=1.0, seed=7) for prompt in prompts]
    first, second = cuda.generate(sampled), cuda.generate(sampled)
    assert [result.text for result in first] == [result.text for result in second]
    assert [result.text for result in first] != cpu_texts  # it sampled
