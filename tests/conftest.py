"""Shared fixtures: the real embedded model, loaded once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
"""The project's real data files (../shared/data beside the checkout); tests read them in place."""


@pytest.fixture(scope="session")
def embedded_scorer():
    """The `default` scorer (embedded Gemma 3 270M, float32, CPU), loaded once."""
    from crossknow.models.registry import ScorerOptions, load_scorer

    return load_scorer("default", ScorerOptions(device="cpu", batch_size=4))


@pytest.fixture(scope="session")
def embedded_checkpoint_dir() -> Path:
    """Directory of the embedded model as a plain transformers checkpoint."""
    from crossknow.models.checkpoint_cache import embedded_checkpoint

    return embedded_checkpoint()
