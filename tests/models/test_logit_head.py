"""The streamed float32 projection against the whole-vocabulary log-softmax, on the embedded model's hidden states."""

from __future__ import annotations

import pytest
import torch

from crossknow.models import logit_head


@pytest.mark.parametrize("width, rows", [(logit_head.SLICE, logit_head.ROWS), (3_000, 5)])
def test_streamed_log_probabilities_equal_the_whole_log_softmax(embedded_scorer, monkeypatch, width, rows):
    """Default slices, and slices so small that the vocabulary is cut in ~90 uneven slices and the rows in chunks."""
    monkeypatch.setattr(logit_head, "SLICE", width)
    monkeypatch.setattr(logit_head, "ROWS", rows)
    scorer = embedded_scorer
    ids = torch.tensor([scorer.tokenizer("The capital of France is Paris. 日本の首都は東京です。").input_ids])
    with torch.inference_mode():
        hidden = scorer.decoder.run(ids, torch.ones_like(ids), torch.arange(ids.shape[1])[None])[0][0]
        # in float64: torch's float32 log-softmax over 262k words is itself off by up to 1e-4 (its normaliser;
        # measured on an AMD EPYC, where this reference failed a correct head by 1e-4)
        full = torch.log_softmax(scorer._head.logits(hidden).double(), dim=-1)
    n = len(hidden)
    source_rows = torch.cat([torch.arange(n), torch.zeros(3, dtype=torch.long)])  # row 0 scored four times
    greedy = full.argmax(dim=-1)
    targets = torch.cat([greedy[: n // 2], ids[0, 1 : n - n // 2 + 1], torch.tensor([0, 131_071, 262_143])])
    with torch.inference_mode():
        logprob, is_top = scorer._head.target_logprobs(hidden, source_rows, targets)
    expected = full[source_rows, targets]
    # float32 sums over 262k words against float64: 1.2e-5 at most measured on an Intel Xeon (AVX-512 kernels) with
    # the small slices, less on AMD; 5e-5 is still far below any difference between two words' log-probabilities
    assert torch.allclose(logprob.double(), expected, atol=5e-5, rtol=0)
    assert is_top.tolist() == (targets == greedy[source_rows]).tolist()
    assert is_top[: n // 2].all()  # the argmax targets are flagged greedy
