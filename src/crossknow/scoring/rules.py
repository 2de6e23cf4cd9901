"""The exact scoring rules: how an item's options become (context, continuation) requests (docs/scoring.md).

`adaxeval` (the paper, Appendix A): a cloze's context is the text before [BLANK], its continuation the option and the
rest of the sentence; a question's context is `question + "\\n"`, its continuation the option; the loss is the mean
token cross-entropy. `lm-eval`: the item as `lm_eval_prompt` shows it, delimiter + choice as the continuation. The
backend then applies each request's boundary rule (`crossknow.models.boundary`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from crossknow.data.lm_eval_prompt import lm_eval_prompt
from crossknow.data.schemas import BLANK, MCItem
from crossknow.errors import CrossknowError
from crossknow.models.boundary import BOUNDARIES, Boundary, move_trailing_whitespace
from crossknow.models.protocol import ScoreRequest
from crossknow.scoring.normalise import Normalisation

Rule = Literal["adaxeval", "lm-eval"]
RULES: tuple[Rule, ...] = ("adaxeval", "lm-eval")

PRIMARY_NORMALISATION: dict[str, Normalisation] = {"adaxeval": Normalisation.MEAN_TOKEN, "lm-eval": Normalisation.SUM}
"""The loss each rule's tables carry in their `loss` column: the AdaXEval mean token cross-entropy, lm-eval's
acc (-sum). Every normalisation is reported from the same rows."""


@dataclass(frozen=True)
class OptionRequest:
    """One option of an item, ready to score."""

    request: ScoreRequest
    """What the backend scores."""
    norm_text: str
    """The option's scored text as the rule defines it; per-character and per-byte losses divide
    by its length (lm-eval counts the choice without its delimiter)."""


def check_boundary(rule: str, boundary: str) -> None:
    """Fail (CrossknowError) on a boundary that `rule` does not take: `literal` reproduces the AdaXEval
    authors' tokenisation and exists for the `adaxeval` rule only (`lm-eval` moves all trailing whitespace,
    as lm-evaluation-harness does)."""
    if boundary not in BOUNDARIES:
        raise CrossknowError(f"unknown boundary {boundary!r}; choose one of {', '.join(BOUNDARIES)}")
    if boundary == "literal" and rule != "adaxeval":
        raise CrossknowError(
            f"--boundary literal reproduces the AdaXEval authors' tokenisation and applies to the adaxeval rule "
            f"only; this run's rule is {rule} (use --boundary moved, or --rule adaxeval)"
        )


def option_requests(item: MCItem, rule: Rule, boundary: Boundary = "moved") -> list[OptionRequest]:
    """The requests for every option of `item`, in option order, tokenised under `boundary` (see
    `check_boundary` for the pairs that are allowed)."""
    check_boundary(rule, boundary)
    if rule == "adaxeval":
        if item.kind == "cloze":
            before, after = item.prompt.split(BLANK)
            return [OptionRequest(ScoreRequest(before, option + after, boundary), option + after)
                    for option in item.options]
        context = item.prompt + "\n"
        return [OptionRequest(ScoreRequest(context, option, boundary), option) for option in item.options]
    if rule == "lm-eval":
        prompt = lm_eval_prompt(item)
        requests = []
        for choice in prompt.choices:
            context, continuation = move_trailing_whitespace(prompt.context, prompt.delimiter + choice)
            requests.append(OptionRequest(ScoreRequest(context, continuation), choice))
        return requests
    raise ValueError(f"unknown rule {rule!r}; choose one of {', '.join(RULES)}")
