"""`evaluate` on the real tokenizers of Llama 3, Llama 2, Qwen2 and Phi-3 (tiny random models of each architecture).

It equals an independent float64 computation within 1e-4 nats (English and Japanese cloze and question items of the
AdaXEval release's format under crossknow's rule, Cross-Lingual Pitfalls pairs under lm-eval's) and
lm-evaluation-harness's HF backend within 1e-3 (10 English and 10 Japanese AdaXEval items under lm-eval's rule),
with the same predictions; every item the tokenizer cannot split at the boundary is reported by its id."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossknow.data.formats import load_item_set
from crossknow.scoring.rules import option_requests
from tests.conftest import SHARED_DATA
from tests.families.conftest import EXAMPLES, FamilyRun, evaluate_family
from tests.lm_eval_peer import lm_eval_loglikelihoods
from tests.reference_scoring import reference_scores

pytestmark = pytest.mark.slow
PAIRS = SHARED_DATA / "cross-lingual-pitfalls" / "Japanese.json"
PAIR_LIMIT = 4
REFERENCE_TOLERANCE = 1e-4
LM_EVAL_TOLERANCE = 1e-3


def pairs_run(family_model, out: Path) -> FamilyRun:
    """The family's run of the first PAIR_LIMIT Japanese Pitfalls pairs under lm-eval's rule."""
    return evaluate_family(*family_model, PAIRS, out, rule="lm-eval", limit=PAIR_LIMIT)


def items_of(data: Path) -> list:
    """The items the test's evaluate call reads from `data` (the Pitfalls file cut to PAIR_LIMIT pairs)."""
    items = load_item_set(data).items
    if data == PAIRS:
        pair_ids = list(dict.fromkeys(item.pair_id for item in items))[:PAIR_LIMIT]
        items = [item for item in items if item.pair_id in pair_ids]
    return items


def check_against_reference(run: FamilyRun, items: list, rule: str) -> None:
    """Every scored option equals the float64 reference; the reference's unsplittable items are the reported ones."""
    scores, unsplittable = reference_scores(run.model_dir, items, rule)
    rows = run.rows
    assert {item.lang for item in items} == {"en", "ja"} and len(run.unscorable) < len(items) / 4
    assert run.unscorable == unsplittable
    assert set(rows) == set(scores)
    for item in items:
        if item.id in unsplittable:
            continue
        losses = []
        for index in range(len(item.options)):
            values, greedy = scores[(item.id, index)]
            row = rows[(item.id, index)]
            where = (run.family, item.id, index)
            assert row.n_tokens == len(values), where
            assert row.logprob_sum == pytest.approx(sum(values), abs=REFERENCE_TOLERANCE), where
            assert row.greedy == greedy, where
            losses.append(-sum(values) / len(values) if rule == "adaxeval" else -sum(values))
        predicted = min(range(len(losses)), key=lambda i: (losses[i], i))
        assert min(range(len(losses)), key=lambda i: (rows[(item.id, i)].loss, i)) == predicted, (run.family, item.id)


def test_evaluate_equals_a_float64_reference_on_adaxeval_items(family_examples: FamilyRun) -> None:
    check_against_reference(family_examples, load_item_set(EXAMPLES).items, "adaxeval")


def test_evaluate_equals_a_float64_reference_on_pitfalls_pairs(family_model, tmp_path: Path) -> None:
    check_against_reference(pairs_run(family_model, tmp_path / "run"), items_of(PAIRS), "lm-eval")


def test_evaluate_equals_lm_eval_on_the_same_requests(family_model, tmp_path: Path) -> None:
    pytest.importorskip("lm_eval.models.huggingface")

    items = [item for lang in ("en", "ja") for item in [i for i in items_of(EXAMPLES) if i.lang == lang][:10]]
    run = evaluate_family(*family_model, [item.model_dump() for item in items], tmp_path / "run", rule="lm-eval")
    keys, requests = [], []
    for item in items:
        if item.id not in run.unscorable:
            for index, option in enumerate(option_requests(item, "lm-eval")):
                keys.append((item.id, index))
                requests.append(option.request)
    theirs = lm_eval_loglikelihoods(run.model_dir, requests)
    rows = run.rows
    assert len(keys) == len(rows) > 60
    for key, (logprob, greedy) in zip(keys, theirs, strict=True):
        assert rows[key].logprob_sum == pytest.approx(logprob, abs=LM_EVAL_TOLERANCE), (run.family, key)
        assert rows[key].greedy == greedy, (run.family, key)
