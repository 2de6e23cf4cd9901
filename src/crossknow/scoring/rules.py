"""The exact scoring rules: how an item's options become (context, continuation) requests.

- `adaxeval` (the paper, Appendix A): a cloze item's context is the text before [BLANK] and the
  continuation is the option followed by the rest of the sentence; a question item's context is
  `question + "\\n"` (the authors' mcqa_minimal template; the newline stays in the context) and the
  continuation is the option. Loss: mean token cross-entropy over the continuation.
- `lm-eval` (lm-evaluation-harness compatible): the item as `lm_eval_prompt` shows it, the
  continuation is delimiter + choice, and all trailing whitespace of the context, newlines too,
  moves to the front of the continuation. acc = argmax of the sum; acc_norm = argmax of the sum
  divided by the choice's characters.
The backend then applies the boundary rule (trailing spaces move; see models/boundary.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from crossknow.data.lm_eval_prompt import lm_eval_prompt
from crossknow.data.schemas import BLANK, MCItem
from crossknow.models.boundary import move_trailing_whitespace
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


def option_requests(item: MCItem, rule: Rule) -> list[OptionRequest]:
    """The requests for every option of `item`, in option order."""
    if rule == "adaxeval":
        if item.kind == "cloze":
            before, after = item.prompt.split(BLANK)
            return [OptionRequest(ScoreRequest(before, option + after), option + after) for option in item.options]
        context = item.prompt + "\n"
        return [OptionRequest(ScoreRequest(context, option), option) for option in item.options]
    if rule == "lm-eval":
        prompt = lm_eval_prompt(item)
        requests = []
        for choice in prompt.choices:
            context, continuation = move_trailing_whitespace(prompt.context, prompt.delimiter + choice)
            requests.append(OptionRequest(ScoreRequest(context, continuation), choice))
        return requests
    raise ValueError(f"unknown rule {rule!r}; choose one of {', '.join(RULES)}")
