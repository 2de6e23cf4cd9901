"""Training data of targeted fine-tuning (the paper's section 3.4 and Appendix B): the pairs of one language.

crossknow's choice (the paper says only "the correct answers from the models' responses"): the model is trained
in the format `pitfalls eval` asks it in: generative, the paper's answering template as a chat turn and
`{"final_answer": "<correct choice>"}` (no reasoning exists for questions it got wrong); loss, the scoring rule's
context and the correct option. DPO's rejected answer is the base model's own wrong choice (`PreferenceCounts`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from pydantic import Field

from crossknow.data.schemas import MCItem, Record
from crossknow.errors import CrossknowError
from crossknow.pitfalls.eval_records import Answering, PairRow
from crossknow.pitfalls.flaws import BilingualPair
from crossknow.pitfalls.simulate import MCQuestion, answer_prompt
from crossknow.scoring.rules import Rule, option_requests

Split = Literal["train", "validation"]
ChatRender = Callable[[str], str]
"""Renders one user message as the prompt text a model continues (its chat format, without BOS)."""


class SFTExample(Record):
    """One supervised example (a line of train/examples.jsonl for SFT): the loss is on `target` only."""

    pair_id: str = Field(description="The pair the example was built from.")
    lang: str = Field(description="The language of the question (the pairs' target language).")
    prompt: str = Field(description="The text the model is given (no loss on it).")
    target: str = Field(description="The text the model learns to write after the prompt: the correct answer.")
    split: Split = Field(description="'train' or 'validation' (the held-out share).")


class PreferenceExample(Record):
    """One DPO preference triple (a line of train/examples.jsonl for DPO)."""

    pair_id: str = Field(description="The pair the triple was built from.")
    lang: str = Field(description="The language of the question (the pairs' target language).")
    prompt: str = Field(description="The text the model is given.")
    chosen: str = Field(description="The preferred answer: the correct choice, in the answer format.")
    rejected: str = Field(description="The dispreferred answer: the base model's wrong choice, in the same format.")
    rejected_choice: int = Field(description="Index of the choice the base model made (a wrong one).")
    split: Split = Field(description="'train' or 'validation' (the held-out share).")


class PreferenceCounts(Record):
    """What became of the pairs when building DPO triples."""

    pairs: int = Field(description="Usable pairs of the training language.")
    with_rejected: int = Field(description="Pairs the base model answered wrong in the target language: triples.")
    right: int = Field(description="Pairs it answered right: no rejected answer, left out.")
    invalid: int = Field(description="Pairs whose target-language answer was invalid: no rejected answer, left out.")


def chosen_answer_texts(question: MCQuestion, answering: Answering, rule: Rule, render: ChatRender) -> tuple[str,
                                                                                                          list[str]]:
    """(prompt, the target text of each choice, in choice order) of `question` in the answer format of
    `answering` (see the module docstring)."""
    if answering == "generative":
        targets = [json.dumps({"final_answer": choice}, ensure_ascii=False) for choice in question.choices]
        return render(answer_prompt(question)), targets
    item = MCItem(id="q", lang=question.lang, kind="question", prompt=question.question,
                  options=list(question.choices), answer=question.answer)
    requests = [option.request for option in option_requests(item, rule)]
    contexts = {request.context for request in requests}
    if len(contexts) != 1:  # every rule gives one context per question item; checked, not assumed
        raise CrossknowError(f"rule {rule!r} gives the options of one question different contexts")
    return contexts.pop(), [request.continuation for request in requests]


def validation_indices(n: int, fraction: float, seed: int) -> set[int]:
    """The indices of `n` examples held out for validation: round(n * fraction) of them (halves up), at
    least one example kept for training, drawn with `random.Random(seed)` (crossknow's choice of draw)."""
    if n == 0 or fraction == 0:
        return set()
    size = min(int(n * fraction + 0.5), n - 1)
    return set(random.Random(seed).sample(range(n), size))


def _split(index: int, held_out: set[int]) -> Split:
    return "validation" if index in held_out else "train"


def sft_examples(pairs: Sequence[BilingualPair], answering: Answering, rule: Rule, render: ChatRender,
                 fraction: float, seed: int) -> list[SFTExample]:
    """One example per pair: its target-language question, the correct choice as the target; split."""
    held_out = validation_indices(len(pairs), fraction, seed)
    examples = []
    for index, pair in enumerate(pairs):
        prompt, targets = chosen_answer_texts(pair.target, answering, rule, render)
        examples.append(SFTExample(pair_id=pair.pair_id, lang=pair.target.lang, prompt=prompt,
                                   target=targets[pair.target.answer], split=_split(index, held_out)))
    return examples


def preference_examples(pairs: Sequence[BilingualPair], rows: Mapping[str, PairRow], answering: Answering,
                        rule: Rule, render: ChatRender, fraction: float, seed: int
                        ) -> tuple[list[PreferenceExample], PreferenceCounts]:
    """DPO triples of the pairs the base model answered wrong in the target language (`rows`: its evaluation
    of these pairs, by pair id), split; and the counts of the pairs left out. A pair without a row is an
    error: the evaluation must cover every pair."""
    missing = [pair.pair_id for pair in pairs if pair.pair_id not in rows]
    if missing:
        raise CrossknowError(f"the base model's evaluation has no answer for {len(missing)} training pairs "
                             f"(e.g. {missing[0]})")
    wrong = [pair for pair in pairs if rows[pair.pair_id].target_correct is False]
    counts = PreferenceCounts(pairs=len(pairs), with_rejected=len(wrong),
                              right=sum(rows[pair.pair_id].target_correct is True for pair in pairs),
                              invalid=sum(rows[pair.pair_id].target_correct is None for pair in pairs))
    held_out = validation_indices(len(wrong), fraction, seed)
    examples = []
    for index, pair in enumerate(wrong):
        prompt, targets = chosen_answer_texts(pair.target, answering, rule, render)
        choice = rows[pair.pair_id].target_choice
        assert choice is not None and choice != pair.target.answer  # a wrong answer names a wrong choice
        examples.append(PreferenceExample(pair_id=pair.pair_id, lang=pair.target.lang, prompt=prompt,
                                          chosen=targets[pair.target.answer], rejected=targets[choice],
                                          rejected_choice=choice, split=_split(index, held_out)))
    return examples, counts
