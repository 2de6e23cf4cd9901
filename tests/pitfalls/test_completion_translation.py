"""The probe's translation side for base models (prompt format 'completion'): crossknow's few-shot completion
prompts, one field per call, the answer carried by its index; the copy check first, then echoes of the prompt, each
with its reason code."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from crossknow.models.generator import GenerateResult, Usage
from crossknow.pitfalls.pair_translation import field_problem, translate_pairs, translation_examples
from crossknow.pitfalls.probe.search import _kind
from crossknow.pitfalls.probe.transformation import DirectPerturbation, ProxyPerturbation, distraction_parser
from crossknow.pitfalls.prompts import TRANSLATION_SHOTS, translation_completion
from crossknow.pitfalls.proxy import ProxyLLM
from crossknow.pitfalls.simulate import MCQuestion

from .scripted import root

SOURCE = Path("/work/shared/data/cross-lingual-pitfalls/source/ai2_arc_easy.json")
QUESTION = MCQuestion("Which organism is a producer?", ("frog", "mushroom", "grass", "lizard"), 2, "en")


def code(problem: str | None) -> str | None:
    """The reason code a check's message starts with."""
    return problem.split(":", 1)[0] if problem else None


@pytest.mark.parametrize(("output", "source", "expected"), [
    ("Which organism is a producer?", "Which organism is a producer?", "copied_source"),
    (" which organism is a producer ", "Which organism is a producer?", "copied_source"),  # case and punctuation
    (" excretory and digestive system", "excretory and digestive", "copied_source"),  # mostly the source
    ("English: Which organism is a producer?", "Which organism is a producer?", "copied_source"),  # copy first
    ("Retour un JSON avec un key,", "Return a JSON object", "template_echo"),
    ("[The Start of the Correct Option]", "hydrogen", "template_echo"),
    ("English: Quel organisme est un producteur ?", "Which organism is a producer?", "template_echo"),
    ("French: Quel organisme est un producteur ?", "Which organism is a producer?", "template_echo"),
    ("Quel animal dort pendant tout l'hiver ?", "Which organism is a producer?", "template_echo"),  # a shot
    ("Un petit bateau en bois.", "a wooden raft", "template_echo"),  # a shot, whole
    ("Quel organisme dort pendant tout l'hiver ?", "Which organism sleeps?", "template_echo"),  # a long run of one
    ("<the translated question>", "Which organism is a producer?", "placeholder"),
    ("   ", "Which organism is a producer?", "empty_output"),
    ("Quel organisme est un producteur ?", "Which organism is a producer?", None),
    ("Mount Everest", "Mount Everest", None),  # a name may stay as it is
    ("kg/m^3", "kg/m^3", None),
    ("le point d'ébullition de l'eau", "the boiling point of water", None),  # the source holds the shot's text
    ("Quelle est la température d'ébullition de l'eau ?", "At what temperature does water boil?", None),
])
def test_a_field_is_checked_for_copies_first_then_for_echoes(output, source, expected):
    examples = translation_examples("fr", (source,))
    assert code(field_problem(output, (source,), "French", examples=examples)) == expected


def test_a_chat_field_is_a_copy_only_when_whole():
    assert field_problem("FR(excretory and digestive)", ("excretory and digestive",), "French", mostly=False) is None
    assert code(field_problem("Excretory and digestive.", ("excretory and digestive",), "French", mostly=False)) == \
        "copied_source"


@pytest.mark.parametrize(("output", "expected"), [
    ("[The Start of the Correct Option]\nhydrogen", "template_echo"),
    ("Generated Distraction: Which organism is a producer in the pond?", "copied_source"),
    ("Distraction: Frogs eat insects.", "template_echo"),
    ("{Generated Distraction: }", "empty_output"),
    ("Every year the garden's frogs grow larger.", None),
])
def test_a_distraction_is_checked_for_copies_of_the_question_and_echoes(output, expected):
    value, error = distraction_parser(QUESTION.question)(output)
    assert code(error) == expected and (value is None) == (expected is not None)


class CompletionTranslator:
    """A base model by script: a completion prompt's last 'English: <text>' line becomes 'T<text in capitals>',
    unless `outputs` maps the text to another output; a distraction prompt gets `distraction`."""

    name, model_id, prompt_format = "scripted", "base", "completion"

    def __init__(self, outputs=None, distraction="Many frogs live near ponds."):
        self.outputs, self.distraction = outputs or {}, distraction
        self.requests = []

    def generate(self, requests):
        self.requests.extend(requests)
        return [GenerateResult(self._text(r.prompt), "scripted", "base", Usage(10, 5)) for r in requests]

    def _text(self, prompt):
        if prompt.endswith("Distraction:"):
            return " " + self.distraction
        if prompt.endswith(("Background:", "Application:")):
            return " " + self.outputs.get(prompt.rsplit("\n", 1)[-1], "Frogs are common.")
        text = re.findall(r"^English: (.*)$", prompt, re.M)[-1]
        return " " + self.outputs.get(text, "T" + "".join(reversed(text)).upper())


def test_base_model_pairs_are_translated_field_by_field_with_the_answer_by_index():
    generator = CompletionTranslator()
    proxy = ProxyLLM.from_generator(generator)
    (pair,) = proxy.translate_questions([QUESTION], "ja", "Japanese")
    assert pair == MCQuestion("T?RECUDORP A SI MSINAGRO HCIHW", ("TGORF", "TMOORHSUM", "TSSARG", "TDRAZIL"), 2, "ja")
    assert len(generator.requests) == 5 and all(r.prompt is not None and not r.messages for r in generator.requests)
    assert all(r.stop == ("\n",) and r.temperature == 0.0 and r.json_schema is None for r in generator.requests)
    first = generator.requests[0].prompt
    assert first == translation_completion(QUESTION.question, "ja", "Japanese") and first.endswith("\nJapanese:")
    assert first.count("\nJapanese: ") == len(TRANSLATION_SHOTS["ja"])  # the examples, then the question


@pytest.mark.parametrize(("outputs", "expected"), [
    ({"grass": "grass"}, "copied_source"),  # one choice copied
    ({"frog": "TSSARG"}, "answer_index"),  # the answer's translation also at another index: no field to ask again
    ({"Which organism is a producer?": "Return a JSON object with one key,", "lizard": "lizard"}, "copied_source"),
    ({"mushroom": "[The Start of the Correct Option]"}, "template_echo"),
])
def test_a_base_model_pair_with_a_bad_field_is_retried_then_reported_by_its_code(outputs, expected):
    generator = CompletionTranslator(outputs)
    (result,) = translate_pairs(ProxyLLM.from_generator(generator).translator, [QUESTION], "fr", "French")
    assert isinstance(result, str) and _kind(result) == expected
    assert (len(generator.requests) > 5) == (expected != "answer_index")  # a bad field is asked again (sampled)


def test_a_language_without_examples_is_asked_with_the_english_labels_only():
    assert translation_completion("a frog", "sw", "Swahili") == "English: a frog\nSwahili:"


def test_base_model_perturbations_are_one_line_completions_and_rejections_are_counted_by_reason():
    generator = CompletionTranslator()
    expansion = ProxyPerturbation(ProxyLLM.from_generator(generator), "French").expand([root(0)])
    assert len(expansion.children) == 3 and not expansion.rejected
    prompt = next(r.prompt for r in generator.requests if r.prompt.endswith("Distraction:"))
    assert prompt.endswith("Question: Question 0?\nWrong option: option 1\nDistraction:")
    child = expansion.children[0]
    assert "Many frogs live near ponds." in child.english.question
    assert "T.SDNOP RAEN EVIL SGORF YNAM" in child.target.question
    echoing = CompletionTranslator(distraction="[The Start of the Correct Option]")
    rejected = ProxyPerturbation(ProxyLLM.from_generator(echoing), "French").expand([root(0)]).rejected
    assert [_kind(r.reason) for r in rejected] == ["perturbation template_echo"] * 3
    copying = CompletionTranslator(outputs={"Many frogs live near ponds.": "Many frogs live near ponds."})
    rejected = ProxyPerturbation(ProxyLLM.from_generator(copying), "French").expand([root(0)]).rejected
    assert [_kind(r.reason) for r in rejected] == ["translation copied_source"] * 3


def test_a_base_models_direct_perturbation_keeps_the_question_verbatim_by_construction():
    generator = CompletionTranslator(outputs={"Application:": "Farmers see them in ponds."})
    (child,) = DirectPerturbation(ProxyLLM.from_generator(generator), "French").expand([root(0)]).children
    assert child.english.question == "Frogs are common. Question 0? Farmers see them in ponds."
    asked = [r.prompt for r in generator.requests if r.prompt.endswith(("Background:", "Application:"))]
    assert [a.rsplit("\n", 2)[-2:] for a in asked] == [["Question: Question 0?", "Background:"],
                                                       ["Question: Question 0?", "Application:"]]
    echoing = CompletionTranslator(outputs={"Background:": "Question: Which gas do plants take in?"})
    (rejection,) = DirectPerturbation(ProxyLLM.from_generator(echoing), "French").expand([root(0)]).rejected
    assert _kind(rejection.reason) == "direct perturbation template_echo"


@pytest.mark.slow
def test_the_embedded_base_model_translates_a_real_question_into_japanese_and_french(embedded_generator):
    """A real ARC question (its question and its four choices, five calls per language) through the completion path
    of the default model: the Japanese has kana or kanji, the French is not the English; the answer is by index."""
    record = next(r for r in json.loads(SOURCE.read_text(encoding="utf-8")) if r["question"] == QUESTION.question)
    question = MCQuestion(record["question"], tuple(record["choices"]), record["choices"].index(record["answer"]), "en")
    proxy = ProxyLLM.from_generator(embedded_generator, max_tokens=40, max_attempts=2)
    (ja,) = proxy.translate_questions([question], "ja", "Japanese")
    (fr,) = proxy.translate_questions([question], "fr", "French")
    for pair in (ja, fr):
        assert isinstance(pair, MCQuestion), pair
        assert pair.answer == question.answer and len(pair.choices) == len(question.choices)
    assert re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", ja.question), ja.question
    assert fr.question.casefold() != question.question.casefold() and not fr.question.startswith("English")
    assert sum(c.casefold() != e.casefold() for c, e in zip(fr.choices, question.choices, strict=True)) >= 2


def test_a_seed_in_another_language_is_labelled_by_its_own_language_without_english_shots():
    from crossknow.pitfalls.prompts import translation_completion

    prompt = translation_completion("水の沸点は？", "fr", "French", "Japanese")
    assert prompt == "Japanese: 水の沸点は？\nFrench:"  # the English examples would teach English -> French
    assert translation_completion("water", "fr", "French").startswith("English: Which animal")


def test_multi_line_inputs_are_flattened_so_the_examples_format_holds():
    """A completion field ends at the newline: an input on two lines would end the prompt's last field early."""
    from crossknow.pitfalls.prompts import perturbation_completion

    prompt = translation_completion("Which organism\nis a  producer?", "fr", "French")
    assert prompt.endswith("\n\nEnglish: Which organism is a producer?\nFrench:")
    prompt = perturbation_completion("Read the text.\n\nWhich organism is a producer?", "a\nfrog")
    assert prompt.endswith("\n\nQuestion: Read the text. Which organism is a producer?\nWrong option: a frog\n"
                           "Distraction:")
