"""The proxy's echo check (`pitfalls.pair_translation`): an output is a few-shot echo only on the completion path (the
chat prompts, Appendix E's, show no examples), only when it repeats an example's OUTPUT (whole, or a long run of it),
and a distraction may say its incorrect option. The chat outputs below are the confirmed good ones that the check used
to reject as `template_echo`."""

from __future__ import annotations

import json
import re

import pytest

from crossknow.models.generator import GenerateResult, Usage
from crossknow.pitfalls.pair_translation import translate_pairs
from crossknow.pitfalls.pairs import SourceQuestion, root_node
from crossknow.pitfalls.probe.search import _kind
from crossknow.pitfalls.probe.transformation import DirectPerturbation, ProxyPerturbation
from crossknow.pitfalls.prompts import DIRECT_SHOTS, PERTURBATION_SHOTS
from crossknow.pitfalls.proxy import ProxyLLM
from crossknow.pitfalls.simulate import MCQuestion

EXHALE = MCQuestion("Which gas do humans exhale?", ("carbon dioxide", "oxygen", "nitrogen", "helium"), 0, "en")
TEMPERATURE = MCQuestion("Which tool is used to measure the temperature of a liquid?",
                         ("a thermometer", "a ruler", "a balance", "a stopwatch"), 0, "en")
BOIL = MCQuestion("At what temperature does water boil?",
                  ("100 degrees Celsius", "0 degrees Celsius", "50 degrees Celsius", "37 degrees Celsius"), 0, "en")
DISTRACTIONS = {
    "oxygen": "Oxygen is carried by red blood cells to every part of the body.",
    "nitrogen": "Nitrogen makes up most of the air around us.",
    "helium": "Helium is lighter than air and fills party balloons.",
    "a ruler": "A ruler lies on the lab bench beside the beaker.",
    "a balance": "The beaker was weighed before it was heated.",
    "a stopwatch": "The liquid was heated for exactly five minutes.",
}
"""Good distractions, each written from its incorrect option (the first three mention the word 'oxygen' or the
phrase 'a ruler' of the completion prompt's examples)."""
JAPANESE = {BOIL.question: "水の沸点は何度ですか？", "100 degrees Celsius": "摂氏100度", "0 degrees Celsius": "摂氏0度",
            "50 degrees Celsius": "摂氏50度", "37 degrees Celsius": "摂氏37度"}
"""A good Japanese translation of BOIL, whose English lacks "the boiling point of water" (a completion example, whose
translation 水の沸点 the question holds)."""


def pair(question: MCQuestion, name: str):
    return root_node(SourceQuestion(name, question), MCQuestion(f"[ja] {question.question}", question.choices,
                                                                 question.answer, "ja"))


class ChatProxy:
    """A chat model by script: Appendix E's perturbation prompt gets the distraction of its incorrect option, a
    translation prompt gets `translations[text]` (else 'JA(text)'), as the JSON the prompt asks for."""

    name, model_id, prompt_format = "scripted", "chat", "chat"

    def __init__(self, distractions=None, translations=None):
        self.distractions, self.translations = distractions or DISTRACTIONS, translations or {}

    def generate(self, requests):
        return [GenerateResult(self._text(r.messages[-1].content), "scripted", "chat", Usage(10, 5)) for r in requests]

    def _text(self, prompt):
        if prompt.startswith("[Instruction]\nYou are an expert at subtly"):
            wrong = re.search(r"\[The Start of the Incorrect Option\]\n(.*)\n", prompt).group(1)
            return "Generated Distraction: " + self.distractions[wrong]
        if "[The Start of the Choices]" in prompt:  # crossknow's pair template (Japanese: no Appendix E template)
            question = re.search(r"\[The Start of the Question\]\n(.*)\n", prompt).group(1)
            choices = re.findall(r"^\d+\. (.*)$", prompt, re.M)
            answer = re.search(r"\[The Start of the Correct Answer\]\n(.*)\n", prompt).group(1)
            return json.dumps({"text": self._t(question), "choices": [self._t(c) for c in choices],
                               "answer": self._t(answer)}, ensure_ascii=False)
        text = re.search(r"\[The Start of the Text\]\n(.*)\n\[The End of the Text\]", prompt, re.S).group(1)
        return json.dumps({"text": self._t(text)}, ensure_ascii=False)

    def _t(self, text):
        return self.translations.get(text, f"JA({text})")


class CompletionProxy:
    """A base model by script, asked by completion: a distraction prompt gets the distraction of its last 'Wrong
    option:' (or `written` for every option), a DP prompt `written`, a translation `translations[text]` (else the
    text reversed in capitals: no copy)."""

    name, model_id, prompt_format = "scripted", "base", "completion"

    def __init__(self, written=None, translations=None):
        self.written, self.translations = written, translations or {}

    def generate(self, requests):
        return [GenerateResult(" " + self._text(r.prompt), "scripted", "base", Usage(10, 5)) for r in requests]

    def _text(self, prompt):
        if prompt.endswith("Distraction:"):
            wrong = re.findall(r"^Wrong option: (.*)$", prompt, re.M)[-1]
            return self.written or DISTRACTIONS[wrong]
        if prompt.endswith(("Background:", "Application:")):
            return self.written
        text = re.findall(r"^English: (.*)$", prompt, re.M)[-1]
        return self.translations.get(text, text[::-1].upper())


@pytest.mark.parametrize("question", [EXHALE, TEMPERATURE], ids=["oxygen", "a ruler"])
@pytest.mark.parametrize("form", [ChatProxy, CompletionProxy])
def test_a_distraction_that_aligns_with_its_incorrect_option_is_no_echo(form, question):
    """The paper asks for "a distraction that aligns with the incorrect option": one that mentions it ("oxygen", "a
    ruler", which are also the incorrect options of the completion prompt's examples) is kept on either path."""
    expansion = ProxyPerturbation(ProxyLLM.from_generator(form()), "Japanese").expand([pair(question, "s")])
    assert [r.reason for r in expansion.rejected] == []
    assert len(expansion.children) == 3


def test_a_chat_translation_holding_an_example_translation_is_no_echo():
    """水の沸点は何度ですか？ holds 水の沸点, the Japanese of a completion example; a chat model was shown none."""
    proxy = ProxyLLM.from_generator(ChatProxy(translations=JAPANESE))
    (translated,) = translate_pairs(proxy.translator, [BOIL], "ja", "Japanese")
    assert translated == MCQuestion("水の沸点は何度ですか？", ("摂氏100度", "摂氏0度", "摂氏50度", "摂氏37度"), 0, "ja")
    assert proxy.translate([BOIL.question], "Japanese") == [("水の沸点は何度ですか？", None)]


def test_a_completion_translation_sharing_a_few_characters_with_an_example_is_no_echo():
    proxy = ProxyLLM.from_generator(CompletionProxy(translations=JAPANESE))
    (translated,) = translate_pairs(proxy.translator, [BOIL], "ja", "Japanese")
    assert isinstance(translated, MCQuestion) and translated.question == "水の沸点は何度ですか？"


def test_a_chat_distraction_is_never_checked_against_the_completion_examples():
    written = PERTURBATION_SHOTS[0][2]  # a chat model was not shown it: the same sentence is its own
    chat = ChatProxy(distractions=dict.fromkeys(EXHALE.choices, written))
    assert not ProxyPerturbation(ProxyLLM.from_generator(chat), "Japanese").expand([pair(EXHALE, "s")]).rejected


@pytest.mark.parametrize("written", [
    PERTURBATION_SHOTS[0][2],  # an example's distraction, whole
    "every living cell in a leaf also needs air to stay alive, even at night",  # a long run of it
])
def test_a_completion_distraction_repeating_an_examples_distraction_is_an_echo(written):
    proxy = ProxyLLM.from_generator(CompletionProxy(written=written))
    rejected = ProxyPerturbation(proxy, "Japanese").expand([pair(EXHALE, "s")]).rejected
    assert [_kind(r.reason) for r in rejected] == ["perturbation template_echo"] * 3


def test_a_completion_direct_perturbation_repeating_its_own_examples_is_an_echo():
    """DP's completion prompt has examples of its own (`DIRECT_SHOTS`): an output repeating one is an echo."""
    proxy = ProxyLLM.from_generator(CompletionProxy(written=DIRECT_SHOTS[0][1]))
    (rejection,) = DirectPerturbation(proxy, "Japanese").expand([pair(EXHALE, "s")]).rejected
    assert _kind(rejection.reason) == "direct perturbation template_echo"
