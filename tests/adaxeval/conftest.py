"""Fixtures of the AdaXEval generation tests: the shipped mini corpus and a pipeline run on a fake LLM."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from crossknow.adaxeval.pipeline import run_generate
from crossknow.adaxeval.records import GenerateConfig, GenerateSummary

from .fake_llm import FakeLLM

MINI_CORPUS = Path(__file__).resolve().parent / "fixtures" / "mini_corpus.jsonl"
"""Four English-Japanese pairs of short technical text (chemistry, medicine, NLP, geology)."""


@pytest.fixture
def mini_corpus() -> Path:
    """The shipped test corpus."""
    return MINI_CORPUS


RunFake = Callable[..., tuple[GenerateSummary, FakeLLM]]


@pytest.fixture
def run_fake(tmp_path: Path) -> RunFake:
    """run(out=None, fake=None, **config) -> (summary, fake): the pipeline over the mini corpus with a
    FakeLLM for every spec (three detectors and a writer by default) and a cache in tmp_path."""

    def run(out: Path | None = None, fake: FakeLLM | None = None, **fields) -> tuple[GenerateSummary, FakeLLM]:
        fake = fake or FakeLLM()
        settings = {
            "corpus": str(MINI_CORPUS), "langs": ["en", "ja"], "detectors": ["hf:d1", "hf:d2", "hf:d3"],
            "writer": "hf:w", "cache": str(tmp_path / "cache.sqlite"), **fields,
        }
        summary = run_generate(GenerateConfig(**settings), out or tmp_path / "run", make_generator=lambda s, o: fake)
        return summary, fake

    return run
