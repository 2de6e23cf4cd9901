"""One model for a sweep: weights switched in place, and the frozen lower blocks run once per input.

On the tiny training run (only the last of 18 blocks trained): the weights comparison finds the 17
frozen blocks without being told, the sweep loads one model, replays the frozen blocks at the later
checkpoints, and gives the numbers of a fresh load of each checkpoint.
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

import pytest

from crossknow.data.formats import load_item_set
from crossknow.dynamics.checkpoints import discover_checkpoints
from crossknow.dynamics.trace import run_trace
from crossknow.models.checkpoint_switch import local_weights_dir, unchanged_blocks
from crossknow.models.registry import ModelOptions, load_scorer
from crossknow.models.sweep_scorers import SweepScorers
from crossknow.scoring.rules import option_requests

pytestmark = pytest.mark.slow


def test_the_weights_comparison_finds_the_frozen_blocks(tiny_train_run, embedded_scorer) -> None:
    later = tiny_train_run.out / "checkpoints" / "checkpoint-4"
    assert unchanged_blocks(embedded_scorer.decoder, local_weights_dir("default")) == 18  # itself: all equal
    assert unchanged_blocks(embedded_scorer.decoder, later) == 17  # last:1 trained only the 18th block


def test_weights_that_do_not_fit_the_model_are_refused_and_nothing_changes(tmp_path: Path, embedded_scorer) -> None:
    from safetensors.torch import save_file

    other = tmp_path / "other"
    other.mkdir()
    save_file({"model.embed_tokens.weight": embedded_scorer.model.model.embed_tokens.weight[:10].clone()},
              str(other / "model.safetensors"))
    before = embedded_scorer.model.model.embed_tokens.weight.clone()
    assert unchanged_blocks(embedded_scorer.decoder, other, load=True) is None
    assert (embedded_scorer.model.model.embed_tokens.weight == before).all()


def test_a_sweep_loads_once_replays_frozen_blocks_and_matches_fresh_loads(tiny_train_run) -> None:
    checkpoints = discover_checkpoints([str(tiny_train_run.out)])
    demo_items = Path(str(resources.files("crossknow") / "samples" / "demo" / "items.jsonl"))
    requests = [option.request for item in load_item_set(demo_items).items[:4]
                for option in option_requests(item, "adaxeval")]
    options = ModelOptions(device="cpu", batch_size=4)
    sweep = SweepScorers([c.spec for c in checkpoints], options)
    swept = []
    for checkpoint in checkpoints:
        swept.append(sweep.scorer_for(checkpoint.spec).score(requests))
    assert sweep.loads == 1
    assert sweep.prefix is not None and sweep.prefix.n_frozen == 17
    assert sweep.prefix.hits >= 2 * sweep.prefix.misses > 0  # two later checkpoints replay the first's calls
    sweep.close()
    for checkpoint, results in zip(checkpoints, swept, strict=True):
        fresh = load_scorer(checkpoint.spec, options).score(requests)
        for got, want in zip(results, fresh, strict=True):
            assert got.n_tokens == want.n_tokens
            assert got.logprob_sum == pytest.approx(want.logprob_sum, abs=1e-4), checkpoint.label


@pytest.mark.nightly  # the reused and the fresh scorers agree per checkpoint in the test above, in every CI run
def test_trace_with_and_without_reuse_gives_the_same_table(tiny_trace_run, tmp_path: Path) -> None:
    shutil.copy(tiny_trace_run.items, tmp_path / "items.jsonl")
    config = tiny_trace_run.config.model_copy(update={"data": [str(tmp_path / "items.jsonl")]})
    plain = run_trace(config, tmp_path / "plain", reuse_frozen=False).to_pylist()
    reused = tiny_trace_run.table.to_pylist()
    assert len(plain) == len(reused) == 3 * 8 * 4
    for a, b in zip(plain, reused, strict=True):
        assert (a["step"], a["item_id"], a["option_index"]) == (b["step"], b["item_id"], b["option_index"])
        assert a["logprob_sum"] == pytest.approx(b["logprob_sum"], abs=1e-4)
