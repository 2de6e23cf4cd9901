"""The yes/no confidence of a JSON field: exact from two scored values, or from top log-probabilities.

AdaXEval (Appendix A.1) measures a model's confidence that a sentence is factual "by the probability of the yes
token output by the `factuality` field". Exact where the backend scores continuations (local models): P(yes) =
p(yes) / (p(yes) + p(no)), the two values scored after the answer's text up to the field (`scored_yes_probability`).
Else from the top log-probabilities at the value's first token; without any, 1.0 or 0.0 (docs/scoring.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from crossknow.generation.ask import CompletionPrompt
from crossknow.generation.cached_calls import CachedCalls
from crossknow.models.generator import AnswerContinuation, GenerateRequest, TokenAlternatives

_PADDING = "\"' \t\r\n"
"""Characters stripped from both ends of an alternative's text before it is read as yes or no."""


def yes_probability(
    logprobs: Sequence[TokenAlternatives] | None, field: str, answer: object = None
) -> float | None:
    """P("yes") for the string value of `field`, in [0, 1]; None when it cannot be told.

    From the top log-probabilities when they are given and the field's value can be located in
    the tokens (see `yes_probability_from_tokens`); otherwise 1.0 or 0.0 from the parsed `answer`
    (see `answer_probability`).
    """
    if logprobs:
        value = yes_probability_from_tokens(logprobs, field)
        if value is not None:
            return value
    return answer_probability(answer)


def answer_probability(answer: object) -> float | None:
    """1.0 for an answer that reads "yes", 0.0 for one that reads "no", else None."""
    if isinstance(answer, bool):
        return 1.0 if answer else 0.0
    if not isinstance(answer, str):
        return None
    kind = classify(answer)
    return None if kind is None else float(kind == "yes")


def classify(text: str) -> str | None:
    """'yes' or 'no' for a token's text, else None.

    Quotes and spaces are stripped from both ends and case is ignored; "yes" is any text that
    starts with yes; "no" must not run on into a letter, so that "none" or "not" are not no.
    """
    word = text.strip(_PADDING).lower()
    if word.startswith("yes"):
        return "yes"
    if word.startswith("no") and not word[2:3].isalpha():
        return "no"
    return None


def value_token_index(tokens: Sequence[str], field: str) -> tuple[int, str] | None:
    """(index, prefix) of the token at which the string value of `field` starts, or None.

    The token texts are joined and `"field":` is searched for (the first occurrence); the value
    starts after the colon and spaces. Tokens whose part from there holds only quotes or spaces are
    skipped. `prefix` is the part of the chosen token before the value (for a token like `: "yes`),
    which alternatives at that position are expected to share.
    """
    joined = "".join(tokens)
    match = re.search(r'"' + re.escape(field) + r'"\s*:\s*', joined)
    if match is None:
        return None
    value_start = match.end()
    start = 0
    for index, token in enumerate(tokens):
        end = start + len(token)
        if end > value_start:
            cut = max(0, value_start - start)
            if token[cut:].strip(_PADDING):
                return index, token[:cut]
            value_start = end  # only padding: the value starts in a later token
        start = end
    return None


def yes_probability_from_tokens(logprobs: Sequence[TokenAlternatives], field: str) -> float | None:
    """P("yes") from the alternatives at the token where the value of `field` starts, or None.

    The chosen token counts as an alternative too (some servers list only the others). Returns
    the yes mass normalised over yes + no when both are present, else the yes mass (0.0 when no
    alternative reads yes); None when the field's value cannot be located in the tokens.
    """
    located = value_token_index([t.token for t in logprobs], field)
    if located is None:
        return None
    index, prefix = located
    position = logprobs[index]
    seen: dict[str, float] = {}
    for text, logprob in (*position.top, (position.token, position.logprob)):
        seen.setdefault(text, logprob)
    mass = {"yes": 0.0, "no": 0.0}
    for text, logprob in seen.items():
        if prefix and text.startswith(prefix):
            text = text[len(prefix) :]
        kind = classify(text)
        if kind is not None and math.isfinite(logprob):
            mass[kind] += math.exp(logprob)
    yes, no = mass["yes"], mass["no"]
    value = yes / (yes + no) if yes > 0 and no > 0 else yes
    return min(1.0, max(0.0, value))


# ---- exact P(yes) from two scored values (local backends) ---------------------------------------

YES_NO_VALUES = ('"yes"', '"no"')
"""The two JSON string values scored after the answer's prefix, quotes included, so that each is
a complete value ("yes" is not the start of "yesterday")."""


def value_prefix(text: str, field: str) -> str | None:
    """`text` up to where the value of `field` starts (after `"field":` and any spaces; the first
    occurrence), or None when the field is not in the text."""
    match = re.search(r'"' + re.escape(field) + r'"\s*:\s*', text)
    return None if match is None else text[: match.end()]


def scored_yes_probability(yes_logprob: float, no_logprob: float) -> float:
    """p(yes) / (p(yes) + p(no)) from the two values' summed log-probabilities, computed stably."""
    difference = no_logprob - yes_logprob
    if difference > 700:  # exp would overflow; the answer is 0 to float precision
        return 0.0
    return 1.0 / (1.0 + math.exp(difference))


CONTENT_FREE_INPUTS = ("N/A", "", "[MASK]")
"""The content-free inputs of contextual calibration (Zhao et al., 2021, "Calibrate Before Use"): a yes/no prompt
with every input slot holding one of them shows the answer the prompt alone leans to."""


def calibrated_yes_probability(p_yes: float, baseline: float) -> float:
    """P(yes) with the prompt's own lean divided out (contextual calibration, Zhao et al., 2021): the two
    probabilities each divided by their content-free value (`baseline` is P(yes) there) and renormalised, i.e.
    logit(p) - logit(baseline) through the sigmoid. A baseline of 0.5 leaves `p_yes` as it is; 0 or 1 (a lean that
    cannot be divided out) leaves it too."""
    if not 0.0 < baseline < 1.0 or p_yes in (0.0, 1.0):
        return p_yes
    shift = math.log(p_yes / (1.0 - p_yes)) - math.log(baseline / (1.0 - baseline))
    return 1.0 / (1.0 + math.exp(-shift)) if shift > -700 else 0.0


YES_NO_WORDS = (" yes", " no")
"""The two continuations scored after a completion prompt that ends where a yes/no answer starts."""


def scored_yes_no(calls: CachedCalls, prompts: Sequence[CompletionPrompt]) -> list[tuple[float, bool]]:
    """(exact P(yes), whether both scores came from the cache) after each prompt: `YES_NO_WORDS` scored as
    continuations through `calls`."""
    asked = [AnswerContinuation((), "", word, p.text) for p in prompts for word in YES_NO_WORDS]
    logprobs, cached = calls.score_answers(asked)
    return [(scored_yes_probability(logprobs[2 * k], logprobs[2 * k + 1]), cached[2 * k] and cached[2 * k + 1])
            for k in range(len(prompts))]


def scored_field_yes(calls: CachedCalls, asked: Sequence[tuple[GenerateRequest, str]]) -> list[float]:
    """Exact P(yes) of a JSON field for each (request, its answer up to the field's value): the values `"yes"` and
    `"no"` scored as continuations of that prefix through `calls`."""
    if not asked:
        return []
    continuations = [AnswerContinuation(request.messages, prefix, value, request.prompt)
                     for request, prefix in asked for value in YES_NO_VALUES]
    logprobs, _ = calls.score_answers(continuations)
    return [scored_yes_probability(logprobs[2 * k], logprobs[2 * k + 1]) for k in range(len(asked))]
