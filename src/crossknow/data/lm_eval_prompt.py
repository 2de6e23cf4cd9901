"""How an item looks to lm-evaluation-harness: one context, the choices, and the target delimiter.

Shared by the `lm-eval` scoring rule and the export to lm-eval tasks, so that both compute the
same log-probabilities.
"""

from __future__ import annotations

from dataclasses import dataclass

from crossknow.data.schemas import BLANK, MCItem


@dataclass(frozen=True)
class LmEvalPrompt:
    """An item as an lm-eval multiple-choice document."""

    context: str
    """lm-eval's doc_to_text: the text the choices are conditioned on."""
    choices: list[str]
    """lm-eval's doc_to_choice, without the delimiter; acc_norm divides by their lengths."""
    delimiter: str
    """lm-eval's target_delimiter, put between the context and each choice."""


def lm_eval_prompt(item: MCItem) -> LmEvalPrompt:
    """The lm-eval view of an item.

    Question: context 'Question: {prompt}\\nAnswer:', delimiter ' ', choices = options.
    Cloze: context = the text before [BLANK] without its trailing whitespace, delimiter = that
    whitespace ('' in Japanese), choices = option + the text after [BLANK].
    """
    if item.kind == "question":
        return LmEvalPrompt(f"Question: {item.prompt}\nAnswer:", list(item.options), " ")
    before, after = item.prompt.split(BLANK)
    context = before.rstrip()
    return LmEvalPrompt(context, [option + after for option in item.options], before[len(context):])
