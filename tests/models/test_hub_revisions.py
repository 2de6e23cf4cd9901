"""Hub checkpoint series against a local cache in the Hub's layout (tests/hub_cache.py), offline: revisions listed
by pattern and ordered by step, fetched as snapshot directories identified by their blobs' SHA-256, pruned without
touching what another revision shares."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from crossknow.dynamics.checkpoints import discover_checkpoints
from crossknow.errors import CrossknowError
from crossknow.models import hub_revisions
from crossknow.models.specs import weights_hash
from crossknow.models.weights import directory_weights_hash
from tests.hub_cache import write_hub_cache

REPO = "org/tiny"
NAMES = ("stage1-step100", "stage1-step200", "stage1-step1000", "stage2-step50", "main")


def model_dir(path: Path, weights: bytes) -> Path:
    """A model directory: its own weights, and a config, tokenizer and optimizer file that every revision shares."""
    path.mkdir(parents=True)
    (path / "config.json").write_text('{"model_type": "llama"}')
    (path / "tokenizer.json").write_text('{"shared": true}')
    (path / "model.safetensors").write_bytes(weights)
    (path / "optimizer.pt").write_bytes(b"optimizer states")
    return path


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    sources = {name: model_dir(tmp_path / "sources" / name, f"weights of {name}".encode()) for name in NAMES}
    write_hub_cache(cache, REPO, sources)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


def test_a_pattern_names_the_matching_revisions_ordered_by_step(cache: Path) -> None:
    found = discover_checkpoints([f"hf:{REPO}@stage1-step*"])
    assert [(c.step, c.spec, c.label) for c in found] == [
        (100, f"hf:{REPO}@stage1-step100", "stage1-step100"),
        (200, f"hf:{REPO}@stage1-step200", "stage1-step200"),
        (1000, f"hf:{REPO}@stage1-step1000", "stage1-step1000"),
    ]
    listed = discover_checkpoints([f"hf:{REPO}@stage2-*, stage1-step100"])
    assert [c.label for c in listed] == ["stage2-step50", "stage1-step100"]


def test_a_series_that_matches_nothing_or_holds_no_step_is_refused_by_name(cache: Path) -> None:
    with pytest.raises(CrossknowError, match=r"no revision matches .*main, stage1-step100"):
        discover_checkpoints([f"hf:{REPO}@stage3-*"])
    with pytest.raises(CrossknowError, match="no step in the name of revision.s. main"):
        discover_checkpoints([f"hf:{REPO}@*"])
    with pytest.raises(CrossknowError, match="not in the Hugging Face cache"):
        discover_checkpoints(["hf:org/absent@step*"])
    with pytest.raises(CrossknowError, match="names one checkpoint, not a series"):
        discover_checkpoints([f"7=hf:{REPO}@stage1-*"])


def test_a_fetched_revision_is_its_snapshot_identified_by_its_blobs(cache: Path, tmp_path: Path) -> None:
    snapshot = hub_revisions.fetch(REPO, "stage1-step200")
    assert snapshot.parent.name == "snapshots"
    assert (snapshot / "model.safetensors").read_bytes() == b"weights of stage1-step200"
    expected = hashlib.sha256(b"weights of stage1-step200").hexdigest()
    assert weights_hash(f"hf:{snapshot}") == f"model.safetensors:{expected}"
    assert weights_hash(f"hf:{snapshot}") == directory_weights_hash(tmp_path / "sources" / "stage1-step200")
    assert hub_revisions.hub_revision(f"hf:{REPO}@stage1-step200") == (REPO, "stage1-step200")
    assert hub_revisions.hub_revision(f"hf:{snapshot}") is None


def test_pruning_a_revision_keeps_what_another_revision_shares(cache: Path) -> None:
    root = cache / "models--org--tiny"
    freed = hub_revisions.prune(REPO, "stage1-step100")
    assert freed == len(b"weights of stage1-step100")  # the shared blobs stay
    assert not (root / "refs" / "stage1-step100").exists()
    assert len(list((root / "snapshots").iterdir())) == len(NAMES) - 1
    assert (hub_revisions.fetch(REPO, "stage1-step200") / "tokenizer.json").read_text() == '{"shared": true}'
    assert hub_revisions.prune(REPO, "stage1-step100") == 0


def test_prune_without_a_hub_revision_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    from pydantic import ValidationError

    from crossknow.dynamics.sequence_inputs import SequenceLossConfig
    from crossknow.dynamics.trace_config import TraceConfig

    local = str(model_dir(tmp_path / "checkpoint-1", b"weights"))
    with pytest.raises(ValidationError, match="local checkpoints are never deleted"):
        TraceConfig(checkpoints=[local, "default"], data=["items.jsonl"], prune=True)
    with pytest.raises(ValidationError, match="no checkpoint is one"):
        SequenceLossConfig(checkpoints=[local], variants="variants.jsonl", prune=True)
    assert TraceConfig(checkpoints=[local, f"hf:{REPO}@stage1-step*"], data=["items.jsonl"], prune=True).prune
