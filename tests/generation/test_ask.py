"""The request object: `StructuredClient.ask_many` sends the rendering its model takes and reads it as the Reading
says for that form (scripted generators; the stages' own tests run it on the embedded model)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from crossknow.errors import CrossknowError
from crossknow.generation.ask import (
    YES_NO,
    Ask,
    ChatPrompt,
    CompletionPrompt,
    NoCompletion,
    Part,
    Parts,
    Reading,
    TextOutput,
    yes_no_value,
)
from crossknow.generation.structured import StructuredClient, per_form
from crossknow.models.generator import AnswerContinuation, GenerateRequest, GenerateResult, Usage


class FormGenerator:
    """Answers a chat request with 'chat:' + its user message and a completion request with 'base:' + its last
    line, as `form` says it takes; scores ' yes' and ' no' by a fixed table."""

    name = "scripted"
    model_id = "m-1"

    def __init__(self, form: str, logprobs: dict[str, float] | None = None):
        self.prompt_format = form
        self.requests: list[GenerateRequest] = []
        self.calls = 0
        self.logprobs = logprobs or {" yes": math.log(0.3), " no": math.log(0.1)}

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        self.requests += requests
        self.calls += 1
        texts = [f"base:{r.prompt.splitlines()[-1]}" if r.prompt is not None else f"chat:{r.messages[-1].content}"
                 for r in requests]
        return [GenerateResult(text, self.name, self.model_id, Usage(3, 2), None, "stop") for text in texts]

    def score_answers(self, requests: Sequence[AnswerContinuation]) -> list[float]:
        return [self.logprobs[r.continuation] for r in requests]


def word_parser(expected: str):
    """A parser valid for one question alone: the output must end with `expected`."""
    return lambda text: (text, None) if text.endswith(expected) else (None, f"not {expected!r}: {text!r}")


ASKS = [Ask(ChatPrompt(None, f"chat question {k}"), CompletionPrompt(f"shot\nbase question {k}"),
            chat_parse=word_parser(f"chat question {k}"), completion_parse=word_parser(f"base question {k}"))
        for k in range(3)]
FREE = TextOutput(lambda text: (text, None))


@pytest.mark.parametrize("form", ["chat", "completion"])
def test_each_model_gets_its_own_rendering_read_by_its_own_parser(form: str) -> None:
    generator = FormGenerator(form)
    outcomes = StructuredClient(generator).ask_many(ASKS, Reading(FREE, FREE), seeds=[5, 6, 7])
    prefix = "chat:chat" if form == "chat" else "base:base"
    assert [o.value for o in outcomes] == [f"{prefix} question {k}" for k in range(3)]
    assert [r.seed for r in generator.requests] == [5, 6, 7]
    assert all((r.prompt is None) == (form == "chat") for r in generator.requests)


def test_a_parser_of_the_other_form_is_not_used() -> None:
    swapped = [Ask(a.chat, a.completion, chat_parse=a.completion_parse, completion_parse=a.chat_parse) for a in ASKS]
    outcomes = StructuredClient(FormGenerator("completion"), max_attempts=2).ask_many(swapped, Reading(FREE, FREE))
    assert not any(o.valid for o in outcomes) and all(o.attempts == 2 for o in outcomes)


def test_without_own_parsers_the_readings_parser_decides() -> None:
    plain = [Ask(a.chat, a.completion) for a in ASKS]
    upper = TextOutput(lambda text: (text.upper(), None))
    outcomes = StructuredClient(FormGenerator("chat")).ask_many(plain, Reading(upper, FREE))
    assert [o.value for o in outcomes] == [f"CHAT:CHAT QUESTION {k}" for k in range(3)]


def test_a_yes_no_question_gives_p_yes_in_both_forms() -> None:
    says_yes = [Ask(ChatPrompt(None, "yes"), CompletionPrompt("Supported:")),
                Ask(ChatPrompt(None, "no"), CompletionPrompt("Supported:"))]
    read_chat = yes_no_value(lambda text: ({"chat:yes": True, "chat:no": False}.get(text), "neither"))
    reading = Reading(TextOutput(read_chat), YES_NO)
    chat = StructuredClient(FormGenerator("chat")).ask_many(says_yes, reading)
    assert [o.value for o in chat] == [1.0, 0.0]
    base = StructuredClient(FormGenerator("completion")).ask_many(says_yes, reading)
    assert [o.value for o in base] == pytest.approx([0.3 / (0.3 + 0.1)] * 2)  # p(yes) / (p(yes) + p(no))


def test_a_base_model_answers_in_parts_in_one_call_and_the_parts_are_assembled() -> None:
    def asked(k: int, broken: bool = False) -> Ask:
        parts = Parts((Part(CompletionPrompt(f"x\nfirst {k}"), seed=100 + k),
                       Part(CompletionPrompt(f"x\nsecond {k}"), word_parser("nothing" if broken else f"second {k}"))),
                      assemble=lambda values: (" + ".join(values), None),
                      worst=lambda errors: errors[-1])
        return Ask(ChatPrompt(None, f"both {k}"), parts)

    generator = FormGenerator("completion")
    good, bad = StructuredClient(generator, max_attempts=1).ask_many([asked(0), asked(1, broken=True)],
                                                                     Reading(FREE, FREE), seeds=[7, 8])
    assert len(generator.requests) == 4 and generator.calls == 1  # every part of every ask in one call
    assert [r.seed for r in generator.requests] == [100, 7, 101, 8]  # a part's own seed, else its ask's
    assert good.value == "base:first 0 + base:second 0" and good.attempts == 2 and good.usage.prompt_tokens == 6
    assert bad.value is None and bad.error == "not 'nothing': 'base:second 1'"


def test_a_chat_model_asks_each_shape_of_answer_in_a_call_of_its_own() -> None:
    upper = TextOutput(lambda text: (text.upper(), None))
    asks = [Ask(ChatPrompt(None, "a"), CompletionPrompt("a")), Ask(ChatPrompt(None, "b"), CompletionPrompt("b"),
                                                                   chat_output=upper)]
    generator = FormGenerator("chat")
    outcomes = StructuredClient(generator).ask_many(asks, Reading(FREE, FREE))
    assert [o.value for o in outcomes] == ["chat:a", "CHAT:B"] and generator.calls == 2


def test_a_question_without_a_completion_form_stops_a_base_model_before_any_request() -> None:
    asks = [ASKS[0], Ask(ChatPrompt(None, "in Korean"), NoCompletion("no examples in Korean (ko)"))]
    chat = FormGenerator("chat")
    assert [o.value for o in StructuredClient(chat).ask_many(asks, Reading(FREE, FREE))][1] == "chat:in Korean"
    base = FormGenerator("completion")
    with pytest.raises(CrossknowError, match=r"no examples in Korean \(ko\)"):
        StructuredClient(base).ask_many(asks, Reading(FREE, FREE))
    assert base.requests == []


def test_a_stage_names_a_procedure_per_form_and_a_form_without_one_stops_it():
    assert per_form("chat", chat="rounds", completion="fields") == "rounds"
    assert per_form("completion", chat="rounds", completion="fields") == "fields"
    with pytest.raises(CrossknowError, match="no procedure for a model asked in the 'instruct' form"):
        per_form("instruct", chat="rounds", completion="fields")
