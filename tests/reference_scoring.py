"""An independent float64 computation of a continuation's log-probabilities, one request at a time.

It re-implements DESIGN.md's boundary rule itself (it never calls crossknow's encoder): the context's trailing
spaces move to the continuation, ctx = tok(context), whole = tok(context + continuation), and a request whose
`whole` does not start with `ctx` (the tokenizer merges across the boundary) has no reference. The whole sequence
runs through a float64 model and the full log-softmax is taken at every position that predicts a continuation
token.
"""

from __future__ import annotations

from typing import Any

import torch


def reference_ids(tokenizer: Any, context: str, continuation: str) -> tuple[list[int], list[int]] | None:
    """(context ids, continuation ids) under the moved-space rule; None when the tokenizer merges at the boundary.
    An empty context encodes to the tokenizer's BOS (else EOS), as the position the first token is predicted from."""
    stripped = context.rstrip(" ")
    continuation = context[len(stripped):] + continuation
    ctx = tokenizer(stripped).input_ids
    whole = tokenizer(stripped + continuation).input_ids
    if whole[: len(ctx)] != ctx:
        return None
    cont = whole[len(ctx):]
    if not ctx:
        ctx = [tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id]
    return ctx, cont


def reference_logprobs(model: Any, ctx: list[int], cont: list[int]) -> tuple[list[float], bool]:
    """Per-token log-probs of `cont` after `ctx` from `model` (float64), and whether each token is the argmax."""
    with torch.no_grad():  # the logits of the positions that predict a continuation token (and the last one's)
        logits = model(torch.tensor([ctx + cont], device=model.device), logits_to_keep=len(cont) + 1).logits[0].double()
    logprobs = torch.log_softmax(logits, dim=-1)
    positions = range(len(cont))
    values = [logprobs[p, t].item() for p, t in zip(positions, cont, strict=True)]
    greedy = all(logprobs[p].argmax().item() == t for p, t in zip(positions, cont, strict=True))
    return values, greedy


def reference(model: Any, tokenizer: Any, context: str, continuation: str) -> tuple[list[float], bool]:
    """Per-token log-probs and greedy flag of one request, computed plainly in float64."""
    ids = reference_ids(tokenizer, context, continuation)
    assert ids is not None, f"the tokenizer merges at the boundary {context[-20:]!r} | {continuation[:20]!r}"
    return reference_logprobs(model, *ids)


def reference_scores(model_dir: Any, items: list, rule: str) -> tuple[dict[tuple[str, int], tuple[list[float], bool]],
                                                                      set[str]]:
    """The float64 reference of every option of `items` under `rule` on the model saved in `model_dir`: per (item
    id, option index), its per-token log-probs and greedy flag; and the ids of the items whose options the
    tokenizer cannot split at the boundary (left out)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from crossknow.scoring.rules import option_requests

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float64).eval()
    scores, unsplittable = {}, set()
    for item in items:
        ids = [reference_ids(tokenizer, o.request.context, o.request.continuation)
               for o in option_requests(item, rule)]
        if any(pair is None for pair in ids):
            unsplittable.add(item.id)
            continue
        for index, pair in enumerate(ids):
            scores[(item.id, index)] = reference_logprobs(model, *pair)
    return scores, unsplittable
