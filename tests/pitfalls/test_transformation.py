"""The proxy transformations with a scripted generator (a real StructuredClient and request cache in
front of it): Appendix E's templates verbatim, temperatures 0.7 and 0.001, only δq^E translated."""

from __future__ import annotations

import json
import re

import pytest

from crossknow.generation.structured import StructuredClient
from crossknow.models.generator import GenerateResult, Usage
from crossknow.pitfalls.pairs import Perturbation, child_node
from crossknow.pitfalls.probe.objective import Simulation
from crossknow.pitfalls.probe.search import candidate_record
from crossknow.pitfalls.probe.transformation import (
    DirectPerturbation,
    ProxyLLM,
    ProxyPerturbation,
    parse_distraction,
    placement,
)
from crossknow.pitfalls.prompts import DIRECT_PERTURBATION_TEMPLATE, PERTURBATION_TEMPLATE
from crossknow.pitfalls.simulate import MCQuestion
from crossknow.store.request_cache import RequestCache

from ..conftest import SHARED_PAPERS
from .scripted import root

PAPER = SHARED_PAPERS / "cross-lingual-pitfalls.txt"


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
        if "[The Start of the Choices]" in prompt and "[The Start of the Answer]" in prompt:  # Appendix E's
            question = re.search(r"\[The Start of the Text\]\n(.*)\n", prompt).group(1)
            choices = json.loads(re.search(r"\[The Start of the Choices\]\n(.*)\n", prompt).group(1))
            answer = re.search(r"\[The Start of the Answer\]\n(.*)\n", prompt).group(1)
            return json.dumps({"text": f"FR({question})", "choices": [f"FR({c})" for c in choices],
                               "answer": f"FR({answer})"})
        if "[The Start of the Choices]" in prompt:  # crossknow's, for the languages the paper has no template for
            question = re.search(r"\[The Start of the Question\]\n(.*)\n", prompt).group(1)
            choices = re.findall(r"^\d+\. (.*)$", prompt, re.M)
            answer = re.search(r"\[The Start of the Correct Answer\]\n(.*)\n", prompt).group(1)
            return json.dumps({"text": f"FR({question})", "choices": [f"FR({c})" for c in choices],
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
    for child in expansion.children:  # the distraction and its translation on the side `placement` says
        text = f"hint about option {child.perturbation.wrong_option}"
        expected = {"before": (f"{text} Question 0?", f"FR({text}) [fr] Question 0?"),
                    "after": (f"Question 0? {text}", f"[fr] Question 0? FR({text})")}
        side = placement(root(0).id, child.perturbation.wrong_option)
        assert (child.english.question, child.target.question) == expected[side]
        assert child.perturbation.placement == side
    first = expansion.children[0]
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
    assert parse_distraction("Generated Distraction:   ") == (None, "empty_output: empty perturbation")


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
    ({"text": "Q", "choices": ["a", "b", "c"], "answer": "b"}, "choice_count"),
    ({"text": "Q", "choices": ["a", "b", "c", "d"], "answer": "z"}, "answer_missing"),
    ({"text": "Q", "choices": ["a", "b", "c", "d"], "answer": "c"}, "answer_index"),
    ({"text": "Q", "choices": ["a", "b", " ", "d"], "answer": "b"}, "empty_choice"),
    ({"text": "<the translated question>", "choices": ["a", "b", "c", "d"], "answer": "b"}, "placeholder"),
    ({"text": "Q", "choices": ["a", "<translated choice 2>", "c", "d"], "answer": "<translated choice 2>"},
     "placeholder"),
])
def test_a_root_translation_with_a_release_flaw_is_retried_then_reported_by_its_code(output, code):
    generator = _FlawedTranslator([output] * 3)
    proxy = ProxyLLM.from_generator(generator, max_attempts=3)
    question = MCQuestion("Which is second?", ("A", "B", "C", "D"), 1, "en")
    (result,) = proxy.translate_questions([question], "fr", "French")
    assert generator.calls == 3 and isinstance(result, str) and result.startswith(f"{code}: ")


def test_a_root_translation_keeps_the_answer_index_and_lands_after_a_retry():
    flawed = {"text": "Q", "choices": ["a", "b", "c", "d"], "answer": "z"}
    good = {"text": " Quelle est la deuxième ? ", "choices": ["A", "B ", "C", "D"], "answer": "B "}
    generator = _FlawedTranslator([flawed, good])
    proxy = ProxyLLM.from_generator(generator, max_attempts=3)
    (result,) = proxy.translate_questions([MCQuestion("Which is second?", ("A", "B", "C", "D"), 1, "en")], "fr",
                                          "French")
    assert generator.calls == 2
    assert result == MCQuestion("Quelle est la deuxième ?", ("A", "B", "C", "D"), 1, "fr")


def test_a_root_translation_that_copies_the_question_is_retried_then_reported_as_a_copy_before_any_flaw():
    """The copy also has a flaw (a choice missing): the copy is what is reported, so the counts do not hide it."""
    copy = {"text": "Which is second? ", "choices": ["A", "B", "C"], "answer": "B"}
    generator = _FlawedTranslator([copy] * 3)
    proxy = ProxyLLM.from_generator(generator, max_attempts=3)
    (result,) = proxy.translate_questions([MCQuestion("Which is second?", ("A", "B", "C", "D"), 1, "en")], "ja",
                                          "Japanese")
    assert generator.calls == 3 and result.startswith("copied_source: ")


# ---- where the inserted text goes ---------------------------------------------------------------------


def test_text_before_and_after_accumulates_outside_and_the_record_keeps_where_it_went():
    """A hand-built lineage: step 1 puts A after the question, step 2 puts B before it, step 3 C after."""
    one = child_node(root(0), Perturbation.placed("A.", "FR(A.)", "after", 1))
    two = child_node(one, Perturbation.placed("B.", "FR(B.)", "before", 2))
    three = child_node(two, Perturbation.placed("C.", "FR(C.)", "after", 3))
    assert three.english.question == "B. Question 0? A. C."
    assert three.target.question == "FR(B.) [fr] Question 0? FR(A.) FR(C.)"
    inserted = three.inserted
    assert (inserted.before_en, inserted.after_en) == ("B.", "A. C.")
    assert (inserted.before_target, inserted.after_target) == ("FR(B.)", "FR(A.) FR(C.)")
    assert inserted.apply(root(0).english, root(0).target) == (three.english, three.target)
    record = candidate_record(three, Simulation({"s": 1.0}, {"s": 0.0}, 1.0, 0), "paper")
    assert (record.english.before, record.english.after) == ("B.", "A. C.")
    assert (record.target.before, record.target.after) == ("FR(B.)", "FR(A.) FR(C.)")
    assert [step.placement for step in record.lineage] == ["after", "before", "after"]
    assert root(0).inserted.placement == "none"
    with pytest.raises(ValueError, match="placement"):
        Perturbation.placed("A.", "FR(A.)", "middle", 1)


def test_the_placement_is_a_fair_coin_stable_across_runs():
    sides = [placement(f"s{i}:fr:{i:012x}", k) for i in range(300) for k in (1, 2, 3)]
    assert set(sides) == {"before", "after"}
    assert 0.45 < sides.count("after") / len(sides) < 0.55  # 900 draws: 3 standard deviations is 0.05
    assert sides == [placement(f"s{i}:fr:{i:012x}", k) for i in range(300) for k in (1, 2, 3)]


def test_only_the_distraction_is_translated_whichever_side_it_goes(tmp_path):
    generator, llm = proxy(tmp_path)
    parents = [root(i) for i in range(6)]
    children = ProxyPerturbation(llm, "French").expand(parents).children
    assert {c.perturbation.placement for c in children} == {"before", "after"}  # 18 children: both occur
    for child in children:
        text = f"hint about option {child.perturbation.wrong_option}"
        parent = next(p for p in parents if p.id == child.parent_id)
        if child.perturbation.placement == "before":
            assert child.english.question == f"{text} {parent.english.question}"
            assert child.target.question == f"FR({text}) {parent.target.question}"
        else:
            assert child.english.question == f"{parent.english.question} {text}"
            assert child.target.question == f"{parent.target.question} FR({text})"
    translated = [r.messages[-1].content for r in generator.requests if r.temperature == 0.001]
    assert translated and all("Question" not in prompt for prompt in translated)


# ---- the paper's translation templates ----------------------------------------------------------------


def _appendix_e_translation(language: str) -> str:
    """Appendix E's "Template for English-to-<language> Translation", read from the paper's text."""
    paper = PAPER.read_text(encoding="utf-8")
    start = paper.index(f"Template for English-to-{language} Translation [Instruction]\n")
    body = paper[paper.index("\n", start) + 1 : paper.index("\n\\faBook", start)]
    return "[Instruction]\n" + body


@pytest.mark.parametrize(("lang", "language"), [("fr", "French"), ("de", "German"), ("it", "Italian"),
                                                ("es", "Spanish")])
def test_the_chat_translation_request_is_appendix_e_template(lang, language):
    generator = _FlawedTranslator([{"text": "T", "choices": ["a", "b", "c"], "answer": "b"}] * 3)
    proxy = ProxyLLM.from_generator(generator)
    sent = []
    original = generator.generate
    generator.generate = lambda requests: sent.extend(requests) or original(requests)
    question = MCQuestion('Which is "second"?', ("A", "B", "C"), 1, "en")
    (result,) = proxy.translate_questions([question], lang, language)
    expected = (_appendix_e_translation(language).replace("{question}", 'Which is "second"?')
                .replace("{choices}", '["A", "B", "C"]').replace("{ground_truth}", "B"))
    assert sent[0].messages[-1].content == expected and sent[0].temperature == 0.001 and len(sent) == 1
    assert sent[0].messages[-1].role == "user" and len(sent[0].messages) == 1
    assert result == MCQuestion("T", ("a", "b", "c"), 1, lang)  # the template's own output keys are read


def test_a_language_without_a_template_in_the_paper_gets_crossknows_prompt_with_the_same_keys():
    generator = _FlawedTranslator([{"text": "二番目は？", "choices": ["A", "B"], "answer": "B"}])
    (result,) = ProxyLLM.from_generator(generator).translate_questions(
        [MCQuestion("Which is second?", ("A", "B"), 1, "en")], "ja", "Japanese")
    assert result == MCQuestion("二番目は？", ("A", "B"), 1, "ja")
    assert "Template for English-to-Japanese" not in PAPER.read_text(encoding="utf-8")
