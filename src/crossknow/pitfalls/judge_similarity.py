"""S by an LLM judge: the paper's kind of semantic check, and the probe's default whenever it has a proxy.

The paper verifies semantics with an LLM: "we employed LLMs for both initial translation and semantic
verification" (section 4), "we employ LLM-based semantic checks to ensure the semantic equivalence of our
bilingual question pairs" (Limitations), at temperature 0.001 (Appendix B.1: "In the translation, semantic
checking, and simulation tasks, the temperature was reduced to 0.001"). It prints no prompt for the check
and no S as a formula. `JudgeSimilarity` is that check as the S of S(q^E, q^E') >= θ and S(q^E', q^T') >= θ'
(equation 4): the judge reads the two texts and answers whether the second asks the same question as the
first, so that the same answer is correct (crossknow's prompt and criterion, since the paper prints none).
S is 1.0 for "yes" and 0.0 for "no", checked at threshold 0.5; an answer still unparseable after the
client's retries gives S = NaN, which the constraint reports as an invalid judgement (the pair is rejected
for it and counted under that reason, never judged "no"). Calls go through the one structured client and
request cache at the paper's 0.001 (`JUDGE_TEMPERATURE`). The judge is the proxy unless the probe names
another model (`crossknow.pitfalls.probe_run.build_judge`); `crossknow.pitfalls.e5` is the judge-free option.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from crossknow.generation.pricing import PriceTable
from crossknow.generation.structured import ChatPrompt, StructuredClient
from crossknow.models.generator import Generator
from crossknow.store.request_cache import RequestCache

JUDGE_THRESHOLD = 0.5
"""The judge's S is 0 or 1: a pair passes on "yes"."""
JUDGE_TEMPERATURE = 0.001
"""The paper's temperature for the semantic check (Appendix B.1)."""

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
"""crossknow's judge prompt (the paper prints none for its LLM semantic check): {first} and {second}."""


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

    @classmethod
    def from_generator(
        cls, generator: Generator, cache: RequestCache | None = None, *, prices: PriceTable | None = None,
        max_tokens: int = 1024, max_attempts: int = 3,
    ) -> JudgeSimilarity:
        """A judge asking `generator` at `JUDGE_TEMPERATURE` through its own client (its own cost meter) over
        `cache`."""
        return cls(StructuredClient(generator, cache, prices=prices, max_tokens=max_tokens,
                                    max_attempts=max_attempts, temperature=JUDGE_TEMPERATURE))

    @property
    def model(self) -> str:
        """The judge's backend and model id, as the run's config records it."""
        return f"{self.client.generator.name}:{self.client.generator.model_id}"

    def similarity(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """The judge's verdict on each (first, second) pair, in order, through the client's cache."""
        prompts = [ChatPrompt(None, JUDGE_TEMPLATE.format(first=a, second=b)) for a, b in pairs]
        outcomes = self.client.call_many(prompts, SameQuestion) if prompts else []
        return [(1.0 if o.value.same_question == "yes" else 0.0) if o.valid else math.nan for o in outcomes]
