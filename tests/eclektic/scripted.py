"""A constructed two-question ECLEKTIC set and a scripted generator for the logic tests of answering
and judging (the real llama.cpp server is used in test_answer.py's end-to-end test)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from crossknow.eclektic.examples import EclekticSet, Question
from crossknow.models.generator import GenerateRequest, GenerateResult, GenerationFailed, Usage

QUESTIONS = [
    Question("q1", "ja", "ja", "清水寺の本堂はいつ再建されましたか？", "1633年", "清水寺の本堂は1633年に再建された。",
             "清水寺", "清水寺の本堂は1633年に再建された。"),
    Question("q1", "en", "ja", "When was the main hall of Kiyomizu-dera rebuilt?", "In 1633",
             "The main hall of Kiyomizu-dera was rebuilt in 1633.", "清水寺", "清水寺の本堂は1633年に再建された。"),
    Question("q2", "en", "en", "Who designed the Forth Bridge?", "John Fowler and Benjamin Baker",
             "The Forth Bridge was designed by John Fowler and Benjamin Baker.", "Forth Bridge",
             "The Forth Bridge was designed by John Fowler and Benjamin Baker."),
    Question("q2", "ja", "en", "フォース橋を設計したのは誰ですか？", "ジョン・ファウラーとベンジャミン・ベイカー",
             "フォース橋はジョン・ファウラーとベンジャミン・ベイカーが設計した。", "Forth Bridge",
             "The Forth Bridge was designed by John Fowler and Benjamin Baker."),
]


def two_question_set() -> EclekticSet:
    """q1 (source ja) and q2 (source en), each asked in ja and en: 4 examples, 2 of them source rows."""
    return EclekticSet("constructed", "main", list(QUESTIONS), {"q1": ("ja", "en"), "q2": ("en", "ja")})


Reply = Callable[[str, int], "str | None"]
"""(user message, seed) -> the output text, or None for a request that fails in transport."""


class Scripted:
    """A Generator whose outputs come from a function of the user message (a completion request's prompt) and
    the seed; asked as a chat model unless `prompt_format` says 'completion'."""

    name = "scripted"

    def __init__(self, reply: Reply, model_id: str = "m", prompt_format: str = "chat"):
        self.reply = reply
        self.model_id = model_id
        self.prompt_format = prompt_format
        self.requests: list[GenerateRequest] = []

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        self.requests.extend(requests)
        results: list[GenerateResult | None] = []
        failures: dict[int, str] = {}
        for i, request in enumerate(requests):
            prompt = request.prompt if request.prompt is not None else request.messages[-1].content
            text = self.reply(prompt, request.seed or 0)
            if text is None:
                failures[i] = "scripted: connection refused"
            results.append(None if text is None else GenerateResult(text, self.name, self.model_id, Usage(20, 2)))
        if failures:
            raise GenerationFailed(results, failures)
        return results  # type: ignore[return-value]
