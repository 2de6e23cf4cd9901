"""crossknow's fast paths on every family's real tokenizer and architecture: a sweep over a training run's
checkpoints (weights switched into the loaded model, frozen lower blocks replayed) gives the numbers of a fresh load
of each checkpoint, and bfloat16 with float32's decisions predicts what float32 predicts. (Shared-context scoring,
a context run once for all its options, is what tests/families/test_scoring.py compares with one-at-a-time
references.)"""

from __future__ import annotations

from pathlib import Path

import pytest

import crossknow
from crossknow.data.formats import load_item_set
from crossknow.dynamics.checkpoints import discover_checkpoints
from crossknow.models.registry import ModelOptions, load_scorer
from crossknow.models.sweep_scorers import SweepScorers
from crossknow.scoring.rules import option_requests
from tests.checkpoint_series import write_moved_checkpoints
from tests.families.conftest import EXAMPLES, FamilyRun
from tests.families.tiny_models import SHAPE

pytestmark = pytest.mark.slow


def predictions(frame) -> dict[str, int]:
    """Item id -> the option of lowest loss (ties to the lower index)."""
    ordered = frame.sort_values(["item_id", "loss", "option_index"])
    return dict(zip(ordered.groupby("item_id").head(1).item_id, ordered.groupby("item_id").head(1).option_index,
                    strict=True))


def test_a_sweep_switches_weights_replays_frozen_blocks_and_matches_fresh_loads(family_model, tmp_path: Path):
    family, model_dir = family_model
    checkpoints = discover_checkpoints([str(write_moved_checkpoints(model_dir, tmp_path / "run"))])
    items = load_item_set(EXAMPLES).items
    chosen = [item for lang in ("en", "ja") for item in [i for i in items if i.lang == lang][:2]]
    requests = [option.request for item in chosen for option in option_requests(item, "lm-eval")]
    options = ModelOptions(device="cpu", batch_size=4)
    sweep = SweepScorers([c.spec for c in checkpoints], options)
    swept = [sweep.scorer_for(checkpoint.spec).score(requests) for checkpoint in checkpoints]
    assert sweep.loads == 1, family
    assert sweep.prefix is not None and sweep.prefix.n_frozen == SHAPE["num_hidden_layers"] - 1, family
    assert sweep.prefix.hits >= 2 * sweep.prefix.misses > 0, family
    sweep.close()
    for checkpoint, results in zip(checkpoints, swept, strict=True):
        fresh = load_scorer(checkpoint.spec, options).score(requests)
        assert [r.n_tokens for r in results] == [r.n_tokens for r in fresh]
        assert [r.logprob_sum for r in results] == pytest.approx([r.logprob_sum for r in fresh], abs=1e-4), (
            family, checkpoint.label)
    assert swept[0] != swept[-1]  # the moved block changes the numbers: the replay had something to get wrong


def test_bfloat16_with_float32_decisions_predicts_what_float32_predicts(family_examples: FamilyRun):
    items = load_item_set(EXAMPLES).items
    chosen = [item.model_dump() for lang in ("en", "ja") for item in [i for i in items if i.lang == lang][:6]]
    bfloat16 = crossknow.evaluate(f"hf:{family_examples.model_dir}", chosen, device="cpu", dtype="bfloat16")
    assert bfloat16.attrs["metrics"]["model"]["dtype"] == "bfloat16"
    float32 = predictions(family_examples.frame)
    assert predictions(bfloat16) == {item: float32[item] for item in predictions(bfloat16)}, family_examples.family
    assert len(predictions(bfloat16)) >= 10
