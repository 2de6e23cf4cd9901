"""Few-shot completion prompts for base models (a client whose `prompt_format` is completion): answering and
judging, crossknow's own; chat models keep the paper's (`crossknow.eclektic.prompts`).

Answering: "Question: ...\\nAnswer:" after `SHOTS` other questions in the asked language, chosen by a generator seeded
with the asked question's id and language (crossknow's choice). Judging: invented shots in the A.2 judge's fields;
correct when P(yes) after "Supported:" is >= 0.5 (crossknow's choice: the more likely word). See docs/eclektic.md.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from crossknow.eclektic.examples import EclekticSet, Question
from crossknow.eclektic.prompts import setting_preamble
from crossknow.eclektic.shots import invented
from crossknow.generation.ask import CompletionPrompt, one_line

SHOTS = 3
"""Questions of the set shown before the asked one (crossknow's choice)."""


def qa_block(question: str, answer: str | None = None) -> str:
    """One shot, "Question: ...\\nAnswer: ...", or (no answer) the asked question, ending where the answer starts.
    The demo trains its model on exactly these blocks."""
    return f"Question: {one_line(question)}\nAnswer:" + (f" {one_line(answer)}" if answer is not None else "")


def choose_shots(pool: EclekticSet, question: Question, k: int = SHOTS) -> list[tuple[str, str]]:
    """(question, answer) shots for asking `question`: up to `k` rows of `pool` in its language, none of them
    a translation of it, chosen by a generator seeded with its id and language; invented shots fill in to two
    (see the module docstring)."""
    others = sorted((row for row in pool.questions if row.lang == question.lang and row.q_id != question.q_id),
                    key=lambda row: row.q_id)
    chosen = random.Random(f"{question.q_id}\t{question.lang}").sample(others, min(k, len(others)))
    shots = [(row.question, row.answer) for row in chosen]
    fallback = invented(question.lang)
    shots += list(zip(fallback.questions, fallback.answers, strict=True))[: max(0, 2 - len(shots))]
    return shots


def answer_completion(setting: str, question: Question, shots: Sequence[tuple[str, str]]) -> CompletionPrompt:
    """The completion prompt that asks `question` in `setting` after `shots`, stopped at the newline."""
    blocks = [qa_block(q, a) for q, a in shots]
    blocks.append(setting_preamble(setting, question) + qa_block(question.question))
    return CompletionPrompt("\n\n".join(blocks))


JUDGE_INTRO = "Is each answer to the question supported by the text?"
"""The first line of the completion judge's prompt."""
JUDGE_SHOTS: tuple[tuple[str, str, str, bool], ...] = (
    ("The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
     "In which year was the Eiffel Tower completed?", "1889", True),
    ("Mount Kilimanjaro, in Tanzania, is the highest mountain in Africa.",
     "In which country is Mount Kilimanjaro?", "Kenya", False),
    ("The novel was written by Natsume Soseki and published in 1914.",
     "Who wrote the novel published in 1914?", "I don't know", False),
    ("The river Thames flows through London before it reaches the North Sea.",
     "Which city does the river Thames flow through?", "It flows through London.", True),
)
"""(text, question, answer, supported): crossknow's invented judge shots, balanced, a refusal among the NOs."""


def _judge_block(text: str, question: str, answer: str) -> str:
    return f"Text: {one_line(text)}\nQuestion: {one_line(question)}\nAnswer: {one_line(answer)}\nSupported:"


def judge_completion(context: str, question: str, predicted_answer: str) -> CompletionPrompt:
    """The completion judge's prompt for one answer (the context and question in the answer's language), ending
    where " yes" or " no" follows."""
    shots = [_judge_block(t, q, a) + (" yes" if yes else " no") for t, q, a, yes in JUDGE_SHOTS]
    return CompletionPrompt("\n\n".join([JUDGE_INTRO, *shots, _judge_block(context, question, predicted_answer)]))
