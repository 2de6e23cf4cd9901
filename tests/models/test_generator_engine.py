"""Which engine generates with a GGUF model: llama.cpp on its quantised weights on the CPU (`default`, `gguf:FILE`),
transformers when asked or when llama-cpp-python is missing (said in one line), and scores from transformers either
way: a llama.cpp generator's answers are scored exactly, and a pool's scorer of the same spec is that scorer."""

from __future__ import annotations

import logging
import sys

import pytest

from crossknow.errors import CrossknowError, MissingDependencyError
from crossknow.generation.clients import ClientPool, Role
from crossknow.models.access import ModelAccess
from crossknow.models.backends.local import llamacpp_decodes
from crossknow.models.generator import AnswerContinuation
from crossknow.models.registry import ModelOptions, load_generator
from crossknow.store.models_file import read_models

pytest.importorskip("llama_cpp", reason="needs llama-cpp-python (crossknow[llamacpp])")


@pytest.fixture
def without_llama_cpp(monkeypatch):
    """This process as if llama-cpp-python were not installed."""
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    monkeypatch.delitem(sys.modules, "crossknow.models.llamacpp_generator", raising=False)


def test_auto_takes_llama_cpp_on_the_cpu_and_the_choice_given_otherwise():
    assert llamacpp_decodes(ModelOptions(device="cpu"))
    assert llamacpp_decodes(ModelOptions(device="cpu", generator_backend="llamacpp"))
    assert not llamacpp_decodes(ModelOptions(device="cpu", generator_backend="transformers"))
    with pytest.raises(CrossknowError, match="generator backend must be one of auto, llamacpp, transformers"):
        llamacpp_decodes(ModelOptions(generator_backend="vllm"))  # type: ignore[arg-type]


def test_without_llama_cpp_python_auto_says_so_once_and_takes_transformers(without_llama_cpp, caplog):
    with caplog.at_level(logging.WARNING):
        assert not llamacpp_decodes(ModelOptions(device="cpu"))
    assert [r.getMessage() for r in caplog.records] == [
        "llama-cpp-python is not installed: the GGUF model generates through transformers, several times slower "
        "(pip install 'crossknow[llamacpp]' for llama.cpp)"]
    assert llamacpp_decodes(ModelOptions(device="cpu", generator_backend="llamacpp"))  # asked for: its error, below
    with pytest.raises(MissingDependencyError, match="llama-cpp-python"):
        load_generator("default", ModelOptions(device="cpu", generator_backend="llamacpp"))


@pytest.mark.model
def test_the_default_model_generates_on_llama_cpp_and_scores_its_answers_exactly(embedded_generator):
    from crossknow.models.llamacpp_generator import LlamaCppGenerator, llamacpp_version

    generator = load_generator("default", ModelOptions(device="cpu"))
    assert isinstance(generator, LlamaCppGenerator) and generator.name == "default"
    assert generator.model_id.endswith(f", llama.cpp {llamacpp_version()}")
    assert generator.prompt_format == embedded_generator.prompt_format == "completion"
    assert type(embedded_generator).__name__ == "HFGenerator"  # generator_backend="transformers" (tests/conftest.py)
    asked = [AnswerContinuation((), "", " Tokyo", "The capital of Japan is"),
             AnswerContinuation((), ' {"answer": "', "yes", "Is Tokyo in Japan?")]
    assert generator.score_answers(asked) == embedded_generator.score_answers(asked)


@pytest.mark.model
def test_a_pools_scorer_of_the_spec_it_generates_with_is_the_generators_own(tmp_path):
    pool = ClientPool(tmp_path / "cache.sqlite", run_dir=tmp_path)
    role = Role(ModelAccess(device="cpu"))
    from crossknow.models.checkpoint_cache import EMBEDDED_GGUF_ID, EMBEDDED_MODEL_ID
    from crossknow.models.llamacpp_generator import llamacpp_version

    generator = pool.generator("default", role)
    assert pool.scorer("default", role) is generator.scorer()
    pool.client("default", role)
    models = read_models(tmp_path)
    assert models["default"] == {"model": f"default:{EMBEDDED_GGUF_ID}, llama.cpp {llamacpp_version()}",
                                 "prompt_format": "completion"}
    assert models["default (scorer)"] == {"model": f"default:{EMBEDDED_MODEL_ID}"}
    other = ClientPool(tmp_path / "cache.sqlite", run_dir=tmp_path)
    with pytest.raises(CrossknowError, match="--generator-backend"):
        other.client("default", Role(ModelAccess(device="cpu", generator_backend="transformers")))
    pool.close()
