"""Parity with lm-evaluation-harness's HF backend on the same local model and the same requests."""

from __future__ import annotations

import pytest

from crossknow.data.formats import load_item_set
from crossknow.scoring.rules import option_requests
from tests.conftest import SHARED_DATA
from tests.lm_eval_peer import lm_eval_loglikelihoods

# Nightly: lm-eval's HF backend is compared on four other families in every CI run (tests/families/test_scoring.py),
# and the embedded model against a float64 reference (tests/models/test_hf_scorer.py).
pytestmark = [pytest.mark.slow, pytest.mark.nightly]
EXAMPLES = SHARED_DATA / "adaxeval-paper-examples.jsonl"


def test_summed_logprobs_equal_lm_eval_within_1e3(embedded_scorer, embedded_checkpoint_dir):
    pytest.importorskip("lm_eval.models.huggingface")

    items = load_item_set(EXAMPLES).items
    english = [item for item in items if item.lang == "en"][:6]
    japanese = [item for item in items if item.lang == "ja"][:6]
    assert {item.kind for item in english} == {"cloze", "question"} and len(japanese) == 6
    requests = [option.request for item in english + japanese for option in option_requests(item, "lm-eval")]

    theirs = lm_eval_loglikelihoods(embedded_checkpoint_dir, requests)
    ours = embedded_scorer.score(requests)

    differences = [abs(mine.logprob_sum - logprob) for mine, (logprob, _) in zip(ours, theirs, strict=True)]
    assert max(differences) < 1e-3, max(differences)
    assert [mine.greedy for mine in ours] == [greedy for _, greedy in theirs]
