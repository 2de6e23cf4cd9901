"""lm-evaluation-harness's HF backend as the peer: its log-likelihoods of the same requests, on a model directory."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from crossknow.models.protocol import ScoreRequest


def lm_eval_loglikelihoods(model_dir: Path, requests: Sequence[ScoreRequest]) -> list[tuple[float, bool]]:
    """(summed log-probability, greedy) of each request from lm-eval's `HFLM` (float32, CPU, batch size 8)."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    lm = HFLM(pretrained=str(model_dir), dtype="float32", device="cpu", batch_size=8)
    instances = [Instance(request_type="loglikelihood", doc={}, arguments=(r.context, r.continuation), idx=i)
                 for i, r in enumerate(requests)]
    return lm.loglikelihood(instances, disable_tqdm=True)
