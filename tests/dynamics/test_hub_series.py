"""`crossknow trace` over a checkpoint series on the Hub (a local cache in the Hub's layout, offline) with --prune:
it gives the numbers of the same checkpoints on local disk, records each revision by its weights' SHA-256, and
leaves only the last revision in the cache; killed while it scores the second revision and run again, it ends the
same way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import crossknow
from crossknow.models.weights import directory_weights_hash
from crossknow.store.run_dir import ShardedTable
from tests.checkpoint_series import write_moved_checkpoints
from tests.hub_cache import hub_environment, write_hub_cache
from tests.processes import run_until_then_kill
from tests.training.tiny_run import DEMO_DIR

pytestmark = pytest.mark.slow
REPO = "org/tiny"
REVISIONS = ("stage1-step100", "stage1-step200", "stage1-step300")
SERIES = f"hf:{REPO}@stage1-step*"
ITEMS = 40


@pytest.fixture(scope="module")
def series(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, pd.DataFrame]:
    """(the local checkpoints, the first ITEMS demo items, their trace over the local checkpoints)."""
    from tests.gpu.tiny_hf_model import write_tiny_model

    root = tmp_path_factory.mktemp("hub_series")
    # Wide enough that a revision takes about a second to score (40 items, one at a time): a kill lands inside it.
    local = write_moved_checkpoints(write_tiny_model(root / "model", hidden_size=384, vocab_rows=16384),
                                    root / "local")
    items = root / "items.jsonl"
    items.write_text("".join((DEMO_DIR / "items.jsonl").read_text(encoding="utf-8").splitlines(True)[:ITEMS]))
    return local, items, crossknow.trace(str(local), items, device="cpu")


def hub_cache(local: Path, cache: Path) -> tuple[dict[str, Path], dict[str, str], Path]:
    """The local checkpoints as REVISIONS of REPO in `cache`: (name -> source, name -> commit, snapshots dir)."""
    sources = {name: local / f"checkpoint-{index}" for index, name in enumerate(REVISIONS)}
    commits = write_hub_cache(cache, REPO, sources)
    return sources, commits, cache / f"models--{REPO.replace('/', '--')}" / "snapshots"


def check_run(out: Path, sources: dict[str, Path], reference: pd.DataFrame) -> None:
    """The run's revisions are recorded by their weights and scored as the local checkpoints are."""
    recorded = json.loads((out / "checkpoints.json").read_text(encoding="utf-8"))
    assert {step: entry["weights"] for step, entry in recorded.items()} == {
        str(100 * (index + 1)): directory_weights_hash(sources[name]) for index, name in enumerate(REVISIONS)}
    table = pd.read_parquet(out / "trace.parquet").sort_values(["step", "item_id", "option_index"])
    reference = reference.sort_values(["step", "item_id", "option_index"])
    assert len(table) == len(reference) == 3 * 4 * ITEMS
    assert list(table.step.unique()) == [100, 200, 300] and list(reference.step.unique()) == [0, 1, 2]
    assert list(table.item_id) == list(reference.item_id)
    assert table.logprob_sum.tolist() == pytest.approx(reference.logprob_sum.tolist(), abs=1e-4)


def test_a_pruned_hub_series_scores_as_local_checkpoints_and_keeps_only_the_last(
        series, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    local, items, reference = series
    sources, commits, snapshots = hub_cache(local, tmp_path / "hub")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    crossknow.trace(SERIES, items, out=tmp_path / "run", device="cpu", prune=True)
    assert [path.name for path in snapshots.iterdir()] == [commits[REVISIONS[-1]]]
    check_run(tmp_path / "run", sources, reference)


def committed_at(out: Path, step: int) -> int:
    """How many items the run has committed at `step` (as a resumed run reads them)."""
    keys = ShardedTable(out / "stages" / "scores").done_keys() if (out / "stages" / "scores").exists() else set()
    return sum(key.startswith(f"{step}\t") for key in keys)


@pytest.mark.nightly  # the sweep's resume and pruning are checked in process above, in every CI run
def test_a_pruned_hub_series_resumes_after_a_kill_and_keeps_only_the_last_revision(series, tmp_path: Path) -> None:
    local, items, reference = series
    sources, commits, snapshots = hub_cache(local, tmp_path / "hub")
    out = tmp_path / "run"
    command = [sys.executable, "-m", "crossknow", "trace", "--checkpoints", SERIES, "--data", str(items), "--out",
               str(out), "--prune", "--device", "cpu", "--batch-size", "1"]
    environment = hub_environment(tmp_path / "hub")

    run_until_then_kill(command, tmp_path, tmp_path / "killed.log", lambda: committed_at(out, 200) >= 1, 300,
                        "the first item of the second revision", env=environment)
    assert committed_at(out, 100) == ITEMS and committed_at(out, 200) < ITEMS, "the kill must land in revision 2"
    assert sorted(path.name for path in snapshots.iterdir()) == sorted(commits[name] for name in REVISIONS[1:])

    resumed = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=environment)
    assert resumed.returncode == 0, resumed.stderr
    assert [path.name for path in snapshots.iterdir()] == [commits[REVISIONS[-1]]]
    check_run(out, sources, reference)
