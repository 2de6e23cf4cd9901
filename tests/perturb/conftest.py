"""The real embedded Gemma 3 tokenizer (the tokenizer only, never the model), loaded once per session, and the
demo corpus's real abstracts."""

from __future__ import annotations

from importlib import resources

import pytest

from crossknow.data.corpus import Document, read_corpus
from crossknow.perturb.sampling import Source
from crossknow.perturb.tokenizers import ModelTokens, load_spec_tokenizer


@pytest.fixture(scope="session")
def model_tokens() -> ModelTokens:
    """The `default` spec's tokenizer as the perturbations use it."""
    tokenizer, name = load_spec_tokenizer("default")
    return ModelTokens(tokenizer, name)


@pytest.fixture(scope="session")
def demo_corpus() -> str:
    """Path of the shipped demo corpus (40 invented facts, each in English and Japanese)."""
    return str(resources.files("crossknow") / "samples" / "demo" / "corpus.jsonl")


@pytest.fixture(scope="session")
def demo_documents(demo_corpus: str) -> dict[str, Document]:
    """The demo corpus by document id."""
    return {doc.id: doc for doc in read_corpus(demo_corpus)}


@pytest.fixture
def ja_source(model_tokens: ModelTokens, demo_documents: dict[str, Document]) -> Source:
    """A real Japanese abstract (f01-ja, 3 sentences, about 70 tokens) with the real tokenizer."""
    return Source(demo_documents["f01-ja"], model_tokens)


@pytest.fixture
def en_source(model_tokens: ModelTokens, demo_documents: dict[str, Document]) -> Source:
    """A real English abstract (f01-en)."""
    return Source(demo_documents["f01-en"], model_tokens)
