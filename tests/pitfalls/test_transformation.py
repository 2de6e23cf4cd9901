"""The proxy transformations with a scripted generator (a real StructuredClient and request cache in
front of it): Appendix E's templates verbatim, temperatures 0.7 and 0.001, only δq^E translated."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from crossknow.generation.structured import StructuredClient
from crossknow.models.generator import GenerateResult, Usage
from crossknow.pitfalls.prompts import DIRECT_PERTURBATION_TEMPLATE, PERTURBATION_TEMPLATE
from crossknow.pitfalls.simulate import MCQuestion
from crossknow.pitfalls.transformation import DirectPerturbation, ProxyLLM, ProxyPerturbation, parse_distraction
from crossknow.store.request_cache import RequestCache

from .scripted import root

PAPER = Path("/work/shared/papers/cross-lingual-pitfalls.txt")


class ScriptedProxy:
    """A generator that writes '{Generated Distraction: <hint k>}' for the perturbation template, a
    rewrite keeping the question for the direct one, 'FR(<text>)' for every translation, and the domain
    'Arts & Literature' for a question with a hint ('Science & Technology' otherwise)."""

    name = "scripted"
    model_id = "proxy"

    def __init__(self):
        self.requests = []

    def generate(self, requests):
        self.requests.extend(requests)
        return [GenerateResult(self._text(r.messages[-1].content), "scripted", "proxy", Usage(10, 5)) for r in requests]

    @staticmethod
    def _text(prompt):
        if prompt.startswith("Classify the multiple-choice question"):  # the probe's categorize stage
            domain = "Arts & Literature" if "hint" in prompt else "Science & Technology"
            return json.dumps({"reasoning": "scripted", "category": domain})
        if prompt.startswith("[Instruction]\nYou are an expert at subtly"):
            wrong = re.search(r"\[The Start of the Incorrect Option\]\n(.*)\n", prompt).group(1)
            return "{Generated Distraction: <hint about " + wrong + ">}"
        if prompt.startswith("[Instruction]\nYou are perturbation design expert"):
            question = re.search(r"\[The Start of the Question\]\n(.*)\n", prompt).group(1)
            return f"New question: Some background. {question} An example."
        if "[The Start of the Choices]" in prompt:
            question = re.search(r"\[The Start of the Question\]\n(.*)\n", prompt).group(1)
            choices = re.findall(r"^\d+\. (.*)$", prompt, re.M)
            answer = re.search(r"\[The Start of the Correct Answer\]\n(.*)\n", prompt).group(1)
            return json.dumps({"question": f"FR({question})", "choices": [f"FR({c})" for c in choices],
                               "answer": f"FR({answer})"})
        text = re.search(r"\[The Start of the Text\]\n(.*)\n\[The End of the Text\]", prompt, re.S).group(1)
        return json.dumps({"text": f"FR({text})"})


def proxy(tmp_path):
    generator = ScriptedProxy()
    return generator, ProxyLLM.from_generator(generator, RequestCache(tmp_path / "requests.sqlite"))


def test_the_perturbation_templates_are_the_papers_verbatim():
    paper = PAPER.read_text(encoding="utf-8")
    for template in (PERTURBATION_TEMPLATE, DIRECT_PERTURBATION_TEMPLATE):
        assert template.startswith("[Instruction]\n")
        assert template.removeprefix("[Instruction]\n") in paper
    assert "{question}" in PERTURBATION_TEMPLATE and "{wrong_answer}" in PERTURBATION_TEMPLATE


def test_one_child_per_incorrect_option_and_only_the_distraction_is_translated(tmp_path):
    generator, llm = proxy(tmp_path)
    expansion = ProxyPerturbation(llm, "French").expand([root(0)])
    assert [c.perturbation.wrong_option for c in expansion.children] == [1, 2, 3] and not expansion.rejected
    first = expansion.children[0]
    assert first.english.question == "hint about option 1 Question 0?"
    assert first.target.question == "FR(hint about option 1) [fr] Question 0?"
    assert first.english.choices == root(0).english.choices and first.depth == 1 and first.parent_id == root(0).id
    perturbing = [r for r in generator.requests if r.temperature == 0.7]
    translating = [r for r in generator.requests if r.temperature == 0.001]
    assert len(perturbing) == 3 and len(translating) == 3
    assert "[The Start of the Model’s Answer]\noption 0\n" in perturbing[0].messages[-1].content
    assert all("Question 0?" not in r.messages[-1].content for r in translating)  # δq^E only
    assert len({r.seed for r in perturbing}) == 3 and all(r.max_tokens == 1024 for r in generator.requests)
    # a second expansion is answered by the request cache: the same children, nothing sent
    again = ProxyPerturbation(llm, "French").expand([root(0)])
    assert [c.id for c in again.children] == [c.id for c in expansion.children]
    assert len(generator.requests) == 6 and llm.perturber.meter.cached_calls == 3


def test_the_direct_perturbation_translates_the_text_around_the_kept_question(tmp_path):
    _, llm = proxy(tmp_path)
    [child] = DirectPerturbation(llm, "French").expand([root(0)]).children
    assert child.english.question == "Some background. Question 0? An example."
    assert child.target.question == "FR(Some background.) [fr] Question 0? FR(An example.)"
    assert child.perturbation.wrong_option is None


def test_a_rewrite_that_loses_the_question_is_rejected_with_the_reason(tmp_path):
    _, llm = proxy(tmp_path)
    llm.perturber = StructuredClient(_Rewriter(), temperature=0.7)
    expansion = DirectPerturbation(llm, "French").expand([root(0)])
    assert not expansion.children
    assert expansion.rejected[0].reason == "direct perturbation: the rewrite does not keep the question verbatim"


def test_parse_distraction_takes_the_text_after_the_marker():
    assert parse_distraction("{Generated Distraction: <Bees like sugar.>}") == ("Bees like sugar.", None)
    assert parse_distraction("Generated Distraction:   ") == (None, "empty perturbation")


class _Rewriter:
    name, model_id = "scripted", "rewriter"

    def generate(self, requests):
        return [GenerateResult("New question: Something else entirely.", "scripted", "rewriter") for _ in requests]


class _FlawedTranslator:
    """Translates by a fixed script of outputs, one per call (the client retries an invalid one)."""

    name, model_id = "scripted", "flawed"

    def __init__(self, outputs):
        self.outputs = list(outputs)
        self.calls = 0

    def generate(self, requests):
        self.calls += len(requests)
        return [GenerateResult(json.dumps(self.outputs.pop(0)), "scripted", "flawed") for _ in requests]


@pytest.mark.parametrize(("output", "code"), [
    ({"question": "Q", "choices": ["a", "b", "c"], "answer": "b"}, "choice_count"),
    ({"question": "Q", "choices": ["a", "b", "c", "d"], "answer": "z"}, "answer_missing"),
    ({"question": "Q", "choices": ["a", "b", "c", "d"], "answer": "c"}, "answer_index"),
    ({"question": "Q", "choices": ["a", "b", " ", "d"], "answer": "b"}, "empty_choice"),
    ({"question": "<the translated question>", "choices": ["a", "b", "c", "d"], "answer": "b"}, "placeholder"),
    ({"question": "Q", "choices": ["a", "<translated choice 2>", "c", "d"], "answer": "<translated choice 2>"},
     "placeholder"),
])
def test_a_root_translation_with_a_release_flaw_is_retried_then_reported_by_its_code(output, code):
    generator = _FlawedTranslator([output] * 3)
    proxy = ProxyLLM.from_generator(generator, max_attempts=3)
    question = MCQuestion("Which is second?", ("A", "B", "C", "D"), 1, "en")
    (result,) = proxy.translate_questions([question], "fr", "French")
    assert generator.calls == 3 and isinstance(result, str) and result.startswith(f"{code}: ")


def test_a_root_translation_keeps_the_answer_index_and_lands_after_a_retry():
    flawed = {"question": "Q", "choices": ["a", "b", "c", "d"], "answer": "z"}
    good = {"question": " Quelle est la deuxième ? ", "choices": ["A", "B ", "C", "D"], "answer": "B "}
    generator = _FlawedTranslator([flawed, good])
    proxy = ProxyLLM.from_generator(generator, max_attempts=3)
    (result,) = proxy.translate_questions([MCQuestion("Which is second?", ("A", "B", "C", "D"), 1, "en")], "fr",
                                          "French")
    assert generator.calls == 2
    assert result == MCQuestion("Quelle est la deuxième ?", ("A", "B", "C", "D"), 1, "fr")


def test_a_root_translation_that_copies_the_question_is_reported_untranslated():
    copy = {"question": "Which is second? ", "choices": ["A", "B", "C", "D"], "answer": "B"}
    proxy = ProxyLLM.from_generator(_FlawedTranslator([copy]), max_attempts=3)
    (result,) = proxy.translate_questions([MCQuestion("Which is second?", ("A", "B", "C", "D"), 1, "en")], "ja",
                                          "Japanese")
    assert result == "untranslated: the question came back unchanged"
