"""S by an LLM judge: the paper's kind of semantic check (section 4; temperature 0.001, Appendix B.1), and the
probe's default whenever it has a proxy.

The judge reads two questions with their lettered choices and says whether the second asks the same question
(crossknow's prompt and criterion: the paper prints none): a chat model as a JSON verdict, S = 1.0 or 0.0, a base
model by a few-shot yes/no, S = P(yes). A pair passes at S >= `JUDGE_THRESHOLD`; an unparseable answer is NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from crossknow.generation.ask import YES_NO, Ask, ChatPrompt, CompletionPrompt, Reading
from crossknow.generation.structured import StructuredClient, parse_structured
from crossknow.pitfalls.simulate import lettered

JUDGE_THRESHOLD = 0.5
"""A pair passes when S >= 0.5: on "yes" (chat form, S is 0 or 1), or when P(yes) >= 0.5 (completion form)."""
JUDGE_TEMPERATURE = 0.001
"""The paper's temperature for the semantic check (Appendix B.1)."""

JUDGE_TEMPLATE = """Compare the two texts below. Each is a question, followed by its lettered choices. The second \
may be in another language, and it may add background sentences before or after the question.
[The Start of the First Text]
{first}
[The End of the First Text]
[The Start of the Second Text]
{second}
[The End of the Second Text]
Does the second text ask the same question as the first, so that the same answer is correct? Return a JSON \
object with two keys: "reasoning", one or two sentences comparing the two questions, then "same_question", \
"yes" or "no"."""
"""crossknow's judge prompt (the paper prints none for its LLM semantic check): {first} and {second}."""

JUDGE_INSTRUCTION = ("Do these two questions ask the same thing, so that the same choice is the correct answer? The "
                     "second may be in another language and may add background sentences.")
"""The first line of the completion form (crossknow's)."""
JUDGE_EXAMPLES: tuple[tuple[str, str, str], ...] = (
    (lettered("Which gas do plants take in from the air?", ("oxygen", "carbon dioxide", "helium")),
     lettered("Quel gaz les plantes absorbent-elles de l'air ?", ("l'oxygène", "le dioxyde de carbone", "l'hélium")),
     "yes"),
    (lettered("Which planet is closest to the Sun?", ("Mercury", "Venus", "Mars")),
     lettered("Which planet is the largest?", ("Mercury", "Venus", "Mars")), "no"),
    (lettered("What do bees make?", ("honey", "milk", "silk")),
     lettered("Bees live in hives. What do bees make?", ("honey", "milk", "silk")), "yes"),
)
"""The completion form's invented solved pairs (first, second, verdict): a translation, another question,
and the same question after a background sentence (crossknow's)."""


def completion_judge_prompt(first: str, second: str) -> str:
    """The completion prompt that asks whether `second` asks the same question as `first`: the instruction,
    the solved `JUDGE_EXAMPLES`, then the pair, ending "Answer:" where " yes" or " no" follows."""
    def block(a: str, b: str) -> str:
        return f"First question:\n{a}\nSecond question:\n{b}\nSame question? Answer:"

    solved = [f"{block(a, b)} {verdict}" for a, b, verdict in JUDGE_EXAMPLES]
    return "\n\n".join([JUDGE_INSTRUCTION, *solved, block(first, second)])


class SameQuestion(BaseModel):
    """The judge's answer: its reasoning, then yes or no."""

    model_config = ConfigDict(extra="forbid")

    reasoning: str = Field(description="How the two questions compare, in a sentence or two.")
    same_question: Literal["yes", "no"] = Field(description="Whether the second asks the same question.")


def _same_question(text: str) -> tuple[float | None, str | None]:
    """1.0 or 0.0 for a chat judge's SameQuestion answer yes or no, else why the output is invalid."""
    answer, error = parse_structured(text, SameQuestion)
    return (None, error) if answer is None else (1.0 if answer.same_question == "yes" else 0.0, None)


JUDGE_READING = Reading(SameQuestion, YES_NO)
"""A chat judge's JSON answer (`_same_question`), a base model's P(yes)."""


class JudgeSimilarity:
    """An LLM judge as a `Similarity`: per pair, 1.0 (yes) or 0.0 (no) from a chat model, P(yes) from a base
    model (completion form), or NaN (invalid after retries)."""

    name = "judge"
    reads_choices = True
    """The constraint gives it each question with its lettered choices (`crossknow.pitfalls.simulate.lettered`)."""

    def __init__(self, client: StructuredClient):
        self.client = client

    @property
    def model(self) -> str:
        """The judge's backend and model id, as the run's config records it."""
        return f"{self.client.generator.name}:{self.client.generator.model_id}"

    @property
    def prompt_format(self) -> str:
        """'chat' (JSON verdict) or 'completion' (few-shot P(yes)): how this judge asks."""
        return self.client.prompt_format

    def similarity(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """The judge's S for each (first, second) pair, in order, through the client's cache (see the module
        docstring)."""
        asks = [Ask(ChatPrompt(None, JUDGE_TEMPLATE.format(first=a, second=b)),
                    CompletionPrompt(completion_judge_prompt(a, b)), chat_parse=_same_question)
                for a, b in pairs]
        outcomes = self.client.ask_many(asks, JUDGE_READING) if asks else []
        return [o.value if o.valid else math.nan for o in outcomes]
