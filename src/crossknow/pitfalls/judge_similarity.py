"""S by an LLM judge: the issue's optional second semantic check, beside the embeddings of `crossknow.pitfalls.e5`.

The paper's checks S(q^E, q^E') >= θ and S(q^E', q^T') >= θ' use multilingual sentence embeddings; a judge
model can back them up where embeddings cannot tell a bad translation from a good one (see `e5`). The
judge reads the two texts and answers whether the second asks the same question as the first, so that the
same answer is correct (crossknow's prompt and criterion: the paper has no judge). S is 1.0 for "yes" and
0.0 for "no", checked at threshold 0.5; an answer still unparseable after the client's retries gives S =
NaN, which the constraint reports as an invalid judgement (the pair is rejected for it and counted under
that reason, never judged "no"). Calls go through the one structured client and request cache, at
temperature 0 (crossknow's choice).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from crossknow.generation.structured import ChatPrompt, StructuredClient

JUDGE_THRESHOLD = 0.5
"""The judge's S is 0 or 1: a pair passes on "yes"."""

JUDGE_TEMPLATE = """Compare the two texts below. The second may be in another language, and it may add \
background sentences before or after the question.
[The Start of the First Text]
{first}
[The End of the First Text]
[The Start of the Second Text]
{second}
[The End of the Second Text]
Does the second text ask the same question as the first, so that the same answer is correct? Return a JSON \
object with two keys: "reasoning", one or two sentences comparing the two questions, then "same_question", \
"yes" or "no"."""
"""crossknow's judge prompt (the paper has no judge): {first} and {second}."""


class SameQuestion(BaseModel):
    """The judge's answer: its reasoning, then yes or no."""

    model_config = ConfigDict(extra="forbid")

    reasoning: str = Field(description="How the two questions compare, in a sentence or two.")
    same_question: Literal["yes", "no"] = Field(description="Whether the second asks the same question.")


class JudgeSimilarity:
    """An LLM judge as a `Similarity`: 1.0 (yes), 0.0 (no) or NaN (invalid after retries) per pair."""

    name = "judge"

    def __init__(self, client: StructuredClient):
        self.client = client

    def similarity(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """The judge's verdict on each (first, second) pair, in order, through the client's cache."""
        prompts = [ChatPrompt(None, JUDGE_TEMPLATE.format(first=a, second=b)) for a, b in pairs]
        outcomes = self.client.call_many(prompts, SameQuestion) if prompts else []
        return [(1.0 if o.value.same_question == "yes" else 0.0) if o.valid else math.nan for o in outcomes]
