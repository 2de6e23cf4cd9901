"""`boundary="literal"`: the AdaXEval authors' tokenisation, against a plain computation of that rule.

The rule, written out here without crossknow's encoder: the cloze context is the text before [BLANK] with its
trailing space, ctx = tok(context), whole = tok(context + option + rest of the sentence), the scored tokens are
whole[len(ctx):], and the model reads ctx + those tokens, one option at a time.
"""

from __future__ import annotations

import pytest
import torch

from crossknow.data.formats import load_item_set
from crossknow.data.schemas import BLANK, MCItem
from crossknow.scoring.rules import option_requests
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.slow
EXAMPLES = SHARED_DATA / "adaxeval-paper-examples.jsonl"
TOLERANCE = 1e-3  # float32 scorer (shared context, KV cache) vs a float32 forward pass of the whole sequence


def english(kind: str) -> list[MCItem]:
    items = [item for item in load_item_set(EXAMPLES).items if item.lang == "en" and item.kind == kind]
    assert len(items) == 10  # the release's 10 English lines, one cloze and one question item each
    return items


def plain_literal(model, tokenizer, item: MCItem, option: str) -> tuple[float, int]:
    """Summed log-probability and token count of one option under the authors' rule."""
    before, after = item.prompt.split(BLANK)
    ctx = tokenizer(before).input_ids
    cont = tokenizer(before + option + after).input_ids[len(ctx):]
    with torch.no_grad():
        logprobs = torch.log_softmax(model(torch.tensor([ctx + cont])).logits[0].double(), dim=-1)
    return sum(logprobs[len(ctx) - 1 + i, token].item() for i, token in enumerate(cont)), len(cont)


def test_literal_scores_equal_the_plain_rule_on_the_papers_english_cloze_items(embedded_scorer):
    items = english("cloze")
    assert all(item.prompt.split(BLANK)[0].endswith(" ") for item in items)  # a space before every [BLANK]
    items = items[:5]  # 20 options, each also scored by a plain forward pass of its own
    requests = [option.request for item in items for option in option_requests(item, "adaxeval", "literal")]
    assert {request.boundary for request in requests} == {"literal"}
    literal = embedded_scorer.score(requests)
    expected = [plain_literal(embedded_scorer.model, embedded_scorer.tokenizer, item, option)
                for item in items for option in item.options]
    for request, result, (logprob, n_tokens) in zip(requests, literal, expected, strict=True):
        assert result.n_tokens == n_tokens, request
        assert result.logprob_sum == pytest.approx(logprob, abs=TOLERANCE), request

    # crossknow's default moves the space: the authors' rule scores one token fewer (the option's first word
    # leaves with the space), and different numbers
    moved = embedded_scorer.score([option.request for item in items for option in option_requests(item, "adaxeval")])
    assert [m.n_tokens - 1 for m in moved] == [r.n_tokens for r in literal]
    assert max(abs(m.logprob_sum - r.logprob_sum) for m, r in zip(moved, literal, strict=True)) > 1.0


def test_literal_and_moved_agree_where_the_context_ends_in_no_space(embedded_scorer):
    """A question's context ends in its newline, which stays: the two rules read the same tokens."""
    items = english("question")[:3]
    literal = embedded_scorer.score([o.request for item in items for o in option_requests(item, "adaxeval", "literal")])
    moved = embedded_scorer.score([o.request for item in items for o in option_requests(item, "adaxeval")])
    assert [r.n_tokens for r in literal] == [m.n_tokens for m in moved]
    assert [r.logprob_sum for r in literal] == pytest.approx([m.logprob_sum for m in moved], abs=TOLERANCE)

