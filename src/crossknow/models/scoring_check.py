"""Does the fast scoring path give the plain computation's numbers in this environment?

The shared-context KV cache and the frozen-block replay lean on how transformers passes the cache and builds masks
(`decoder.TransformersDecoder`), which changes between releases. `check_scoring_path` compares both with a plain
forward of each whole sequence on a tiny random Gemma 3 model, through transformers and
`crossknow.models.gemma3_text`, in well under a second, so that `demo`, `train` and `trace` fail at start
(`ensure_scoring_path`, before any model loads), not after training.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from types import SimpleNamespace
from typing import Any

from crossknow.errors import CrossknowError
from crossknow.models.protocol import ScoreRequest

TOLERANCE = 1e-4
"""Largest difference in nats allowed between a fast path and the plain forward (float32)."""

CHECK_REQUESTS = (
    ScoreRequest("The capital of France is", " Paris, a city on the Seine."),
    ScoreRequest("The capital of France is", " Berlin."),
    ScoreRequest("The capital of France is", " x"),
    ScoreRequest("Water boils at a hundred degrees", " Celsius at sea level"),
    ScoreRequest("A", " short context, a long continuation past the window"),
)
"""Shared and single contexts, one-token and long options, contexts longer and shorter than the
tiny model's sliding window: the cases where cache reuse and masks can go wrong."""


class ByteTokenizer:
    """A tokenizer for the tiny check model: BOS, then one id per UTF-8 byte (folded into 61 ids)."""

    bos_token_id, eos_token_id, pad_token_id = 1, 2, 0
    vocab_size = 64

    def __call__(self, text: str) -> SimpleNamespace:
        """Token ids of `text` as `.input_ids`, as a transformers tokenizer returns them."""
        return SimpleNamespace(input_ids=[self.bos_token_id] + [3 + byte % 61 for byte in text.encode()])


def tiny_sliding_model(seed: int = 0) -> Any:
    """A random 3-block Gemma 3 text model (two sliding-window blocks of width 4, one full), float32."""
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    config = Gemma3TextConfig(
        vocab_size=ByteTokenizer.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
        num_attention_heads=2, num_key_value_heads=1, head_dim=16, sliding_window=4,
        layer_types=["sliding_attention", "sliding_attention", "full_attention"], max_position_embeddings=128,
        pad_token_id=0, bos_token_id=1, eos_token_id=2,
    )
    torch.manual_seed(seed)
    return Gemma3ForCausalLM(config).eval()


def plain_logprobs(model: Any, context_ids: list[int], continuation_ids: list[int]) -> list[float]:
    """Per-token log-probabilities of one continuation from one plain forward of the whole sequence.

    The log-softmax runs in float64: torch's float32 log-softmax over Gemma's 262k words is off by
    up to 1e-4 nats by itself (measured), as much as the tolerance."""
    import torch

    with torch.inference_mode():
        ids = torch.tensor([context_ids + continuation_ids], device=next(model.parameters()).device)
        logits = model(input_ids=ids).logits[0].double()
    logprobs = torch.log_softmax(logits, dim=-1)
    start = len(context_ids) - 1
    return [logprobs[start + k, token].item() for k, token in enumerate(continuation_ids)]


def path_differences(tokenizer: Any, model: Any, requests: Sequence[ScoreRequest] = CHECK_REQUESTS) -> dict[str, float]:
    """Largest per-token difference (nats) from the plain forward for each fast path.

    `shared-prefix`: the HF scorer, all requests in one batch (contexts run once, left padded, their
    KV cache reused by every option). `frozen-blocks`: the same batch scored again with all but the
    last decoder block replayed from the first pass, as a checkpoint sweep does. The model is left
    as it was (the replay's hooks are removed).
    """
    from crossknow.models.frozen_prefix import FrozenPrefix
    from crossknow.models.hf_scorer import HFScorer

    device = str(next(model.parameters()).device)
    scorer = HFScorer("check", model_id="scoring-path-check", device=device, batch_size=len(requests),
                      loaded=(tokenizer, model))
    plain = [plain_logprobs(model, *scorer.encode_request(request)) for request in requests]

    def largest(results) -> float:
        return max(abs(ours - theirs) for result, reference in zip(results, plain, strict=True)
                   for ours, theirs in zip(result.token_logprobs, reference, strict=True))

    differences = {"shared-prefix": largest(scorer.score(requests, keep_token_logprobs=True))}
    prefix = FrozenPrefix(scorer.decoder, len(scorer.decoder.blocks) - 1)
    try:
        scorer.score(requests)  # runs whole and keeps the frozen blocks' output
        replayed = scorer.score(requests, keep_token_logprobs=True)
        if prefix.hits == 0:
            raise CrossknowError("the frozen-block replay was never used on a repeated batch")
        differences["frozen-blocks"] = largest(replayed)
    finally:
        prefix.remove()
    return differences


def check_scoring_path() -> None:
    """Raise CrossknowError, naming the installed versions, when a fast path of the HF scorer does not
    give the plain forward's numbers (within TOLERANCE) on the tiny sliding-window model, in transformers'
    module or in crossknow's. Without torch and transformers there is no HF path to check, and nothing is done."""
    from importlib.metadata import version
    from importlib.util import find_spec

    if find_spec("torch") is None or find_spec("transformers") is None:
        return
    try:
        from crossknow.models.gemma3_text import from_transformers

        model = tiny_sliding_model()
        differences = {
            f"{path} ({kind})": value
            for kind, module in (("transformers' Gemma 3", model), ("crossknow's Gemma 3", from_transformers(model)))
            for path, value in path_differences(ByteTokenizer(), module).items()
        }
    except Exception as error:  # any failure here is the environment's: say so before minutes of work
        problem = f"it failed with {type(error).__name__}: {error}"
    else:
        wrong = {path: value for path, value in differences.items() if not value <= TOLERANCE}
        if not wrong:
            return
        problem = "; ".join(f"{path} differs from a plain forward by {value:.3g} nats" for path, value in wrong.items())
    raise CrossknowError(
        f"the scoring path does not work with transformers {version('transformers')} and torch "
        f"{version('torch')}: {problem}. Install the tested versions with `make install` (from the lock "
        "file); see the README's set-up section."
    )


@cache
def ensure_scoring_path() -> None:
    """`check_scoring_path`, once per process (a failure is checked again on the next call): the installed
    versions it checks do not change while a process runs, which may run several pipelines."""
    check_scoring_path()
