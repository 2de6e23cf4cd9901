"""A scripted Generator for the pipeline's logic tests: it answers each prompt kind (told by the JSON
schema's title) with a valid, plausible object built from the prompt, unless a test overrides it.
The real llama.cpp server is exercised in test_generate_e2e.py."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence

from crossknow.models.generator import GenerateRequest, GenerateResult, GenerationFailed, TokenAlternatives, Usage

Answer = Callable[[str, GenerateRequest], "str | GenerateResult | None"]
"""(user message, request) -> JSON text, a full result, or None for a transport failure."""


EXAMPLES = frozenset(
    {
        "Blood sugar level can be controlled by insulin.",
        "Blood sugar level can be controlled by [BLANK].",
        "In this study, we examined the role of insulin in 40 patients.",
        "血糖値はインスリンによって調節される。",
        "血糖値は[BLANK]によって調節される。",
        "本研究では、40例の患者でインスリンの役割を検討した。",
        "insulin",
        "インスリン",
    }
)
"""Values of the prompts' own examples, skipped when reading a prompt."""


def _line(user: str, *labels: str) -> str:
    """The text after the last line starting with one of `labels` that is not one of the examples."""
    found = ""
    for line in user.splitlines():
        for label in labels:
            if line.startswith(label) and line[len(label) :].strip() not in EXAMPLES:
                found = line[len(label) :].strip()
    return found


def sentence_of(user: str) -> str:
    """The sentence a prompt is about."""
    return _line(user, "Sentence: ", "文: ")


def object_of(user: str) -> str:
    """The object of the fact a 'cloze' prompt gives (the first one: the examples come after it)."""
    found = re.search(r'object "(.*)"$|目的語「(.*)」$', user, re.M)
    assert found, user
    return next(group for group in found.groups() if group)


def _latin(c: str) -> bool:
    return c.isascii() and c.isalnum()


def _cut(text: str, k: int) -> int:
    """`k`, moved right out of a Latin word or number (so that no part of the triple begins inside one)."""
    while 0 < k < len(text) and _latin(text[k - 1]) and _latin(text[k]):
        k += 1
    return k


def head(sentence: str) -> str:
    """The start of a sentence: its first two words, or in Japanese its first two characters, extended to
    the end of a Latin word they begin ("TiO2" of "TiO2のアナターゼ相...")."""
    if " " in sentence:
        return " ".join(sentence.split()[:2])
    return sentence[: _cut(sentence, 2)]


def reference_of(user: str) -> dict[str, str]:
    """The reference triple a 'triple' prompt gives (the first one: the example comes after it)."""
    english = r'subject "(.*)", relation "(.*)", object "(.*)"$'
    japanese = r"主語「(.*)」、関係「(.*)」、目的語「(.*)」$"
    found = re.search(f"{english}|{japanese}", user, re.M)
    assert found, user
    groups = found.groups()
    values = groups[:3] if groups[0] is not None else groups[3:]
    return dict(zip(("subject", "relation", "object"), values, strict=True))


def default_answer(schema: str, user: str) -> str:
    """A valid answer of the kind `schema` names."""
    if schema == "EntityList":
        return json.dumps({"entities": re.findall(r"\b[A-Z][A-Za-z0-9]+", sentence_of(user))})
    if schema in ("FactAnswer", "FactAnswerReasoningFirst"):
        words = sentence_of(user).rstrip(".。").split()
        if len(words) < 3:  # a Japanese sentence: cut it in three
            text = sentence_of(user).rstrip("。")
            first, second = (_cut(text, k * max(len(text) // 3, 1)) for k in (1, 2))
            words = [text[:first], text[first:second], text[second:]]
        triple = {"subject": words[0], "relation": " ".join(words[1:-2]) or words[1], "object": " ".join(words[-2:])}
        if len(words) == 3:
            triple = {"subject": words[0], "relation": words[1], "object": words[2]}
        answer = {"factuality": "yes", "triple": triple, "reasoning": "It states a fact."}
        if schema == "FactAnswerReasoningFirst":  # the fields in the order its schema asks for
            answer = {"reasoning": answer["reasoning"], "factuality": "yes", "triple": triple}
        return json.dumps(answer, ensure_ascii=False)
    if schema == "TripleAnswer":  # the reference triple, unchanged
        return json.dumps(reference_of(user), ensure_ascii=False)
    if schema == "ClozeAnswer":
        sentence, obj = sentence_of(user), object_of(user)
        cloze = sentence.replace(obj, "[BLANK]", 1) if obj in sentence else sentence + " [BLANK]"
        return json.dumps({"reasoning": "Blank the object.", "cloze": cloze}, ensure_ascii=False)
    if schema == "ParaphraseAnswer":  # one question per cloze: the same question for two facts is rejected
        cloze = _line(user, "Cloze: ", "穴埋め文: ").rstrip(".。")
        question = f"Which thing completes: {cloze.replace('[BLANK]', '...')}?"
        return json.dumps({"reasoning": "Ask for the blank.", "question": question}, ensure_ascii=False)
    if schema == "DistractorAnswer":
        answer = _line(user, "Correct answer: ", "正答: ")
        return json.dumps({"distractors": [f"{answer} (variant {k})" for k in "ABC"]}, ensure_ascii=False)
    if schema == "InLanguageJudgement":
        return json.dumps({"cloze": "Good", "paraphrase": "Good", "options_cloze": "Good", "options_question": "Good"})
    if schema == "CrossLanguageJudgement":
        return json.dumps({"support": 2})
    raise AssertionError(f"unexpected schema {schema}")


def yes_logprobs(text: str, p_yes: float) -> tuple[TokenAlternatives, ...]:
    """Tokens of `text` (a FactAnswer JSON) with P(yes) = p_yes at the factuality value."""
    head, _, tail = text.partition('"factuality": "')
    value = "yes" if tail.startswith("yes") else "no"
    rest = tail[len(value) :]
    top = tuple((word, math.log(p)) for word, p in (("yes", p_yes), ("no", 1 - p_yes)) if p > 0)
    chosen = dict(top).get(value, -30.0)
    return (
        TokenAlternatives(head + '"factuality": "', 0.0, ()),
        TokenAlternatives(value, chosen, top),
        TokenAlternatives(rest, 0.0, ()),
    )


class FakeLLM:
    """A Generator (one method) answering from `answers[schema title]` or `default_answer`."""

    name = "fake"

    def __init__(self, model_id: str = "fake-1", answers: dict[str, Answer] | None = None):
        self.model_id = model_id
        self.answers = dict(answers or {})
        self.requests: list[GenerateRequest] = []

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        """Answer every request; raise GenerationFailed when some answer is None."""
        results: list[GenerateResult | None] = []
        failures: dict[int, str] = {}
        for index, request in enumerate(requests):
            self.requests.append(request)
            schema = (request.json_schema or {}).get("title", "")
            user = request.messages[-1].content.split("\n\nReturn only")[0]
            custom = self.answers.get(schema)
            out = custom(user, request) if custom else default_answer(schema, user)
            if out is None:
                failures[index] = "fake: connection refused"
                results.append(None)
            elif isinstance(out, GenerateResult):
                results.append(out)
            else:
                results.append(
                    GenerateResult(text=out, backend=self.name, model_id=self.model_id, usage=Usage(100, 20),
                                   finish_reason="stop")
                )
        if failures:
            raise GenerationFailed(results, failures)
        return results  # type: ignore[return-value]
