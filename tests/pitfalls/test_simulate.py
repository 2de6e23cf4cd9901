"""Simulators: the paper's templates, strict answer extraction, retries and invalid answers, loss-based answers."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from crossknow.generation.clients import ClientPool, Role
from crossknow.generation.structured import RETRY_TEMPERATURE, StructuredClient
from crossknow.models.generator import GenerateRequest, GenerateResult, Usage
from crossknow.models.protocol import ScoreRequest
from crossknow.pitfalls.probe.sources import read_source_file
from crossknow.pitfalls.simulate import (
    ANSWER_TEMPLATES,
    LETTER_MAX_TOKENS,
    GenerativeSimulator,
    LossSimulator,
    MCQuestion,
    SimAnswer,
    Simulator,
    answer_prompt,
    completion_answer_prompt,
    extract_choice,
    extract_letter,
    template_language,
)

from ..conftest import SHARED_DATA

PAPER = SHARED_DATA.parent / "papers" / "cross-lingual-pitfalls.txt"
ARC_EASY = SHARED_DATA / "cross-lingual-pitfalls" / "source" / "ai2_arc_easy.json"
CAPITAL = MCQuestion("What is the capital of France?", ("Berlin", "Paris", "Madrid", "Rome"), 1, "en")


@pytest.mark.skipif(not PAPER.exists(), reason=f"{PAPER} is not present")
@pytest.mark.parametrize("lang", ["en", "fr", "it", "es"])
def test_templates_are_the_papers_appendix_e_verbatim(lang):
    text = PAPER.read_text(encoding="utf-8")
    assert ANSWER_TEMPLATES[lang] in text
    heading = {"en": "English", "fr": "French", "it": "Italian", "es": "Spanish"}[lang]
    start = text.index(f"Template for Answering {heading} Questions (Zero-Shot + CoT) [Instruction]\n")
    assert text[start:].split("\n", 1)[1].startswith(ANSWER_TEMPLATES[lang])


def test_prompt_fills_the_slots_and_falls_back_to_english():
    prompt = answer_prompt(CAPITAL)
    assert prompt.startswith("Please carefully read the question below")
    assert "\nWhat is the capital of France?\n" in prompt and '\n["Berlin", "Paris", "Madrid", "Rome"]\n' in prompt
    chinese = MCQuestion("法国的首都是{choices}哪里？", ("柏林", "巴黎"), 1, "zh")
    assert template_language("zh") == "en" and template_language("fr") == "fr"
    # a literal "{choices}" inside the question is text, not a slot
    assert "\n法国的首都是{choices}哪里？\n" in answer_prompt(chinese) and '["柏林", "巴黎"]' in answer_prompt(chinese)
    assert answer_prompt(MCQuestion("Q?", ("a", "b"), 0, "fr")).startswith("Veuillez lire attentivement")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('Step 1... so Paris.\n{"final_answer": "Paris"}', (1, None)),
        ('{"final_answer": "Berlin"} wait, no: {"final_answer": " Paris "}', (1, None)),  # the last one counts
        ('```json\n{ "final_answer" : "Rome" }\n```', (3, None)),
        ("The answer is Paris.", (None, 'no {"final_answer": "..."} object in the output')),
        ('{"final_answer": "paris"}', (None, "final_answer 'paris' is not one of the 4 choices")),
        ('{"final_answer": "B"}', (None, "final_answer 'B' is not one of the 4 choices")),
    ],
)
def test_strict_extraction(text, expected):
    assert extract_choice(text, CAPITAL.choices) == expected


def test_extraction_refuses_an_answer_that_matches_two_choices():
    assert extract_choice('{"final_answer": "x"}', ["x", "y", "x"]) == (None, "final_answer 'x' matches choices [0, 2]")
    assert extract_choice('{"final_answer": "say \\"hi\\""}', ['say "hi"', "no"]) == (0, None)


class Replies:
    """A Generator that answers each user message from a list of outputs, one per attempt."""

    name = "scripted"
    model_id = "m"

    def __init__(self, outputs: dict[str, list[str]]):
        self.outputs = outputs
        self.seen: list[GenerateRequest] = []

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        self.seen.extend(requests)
        results = []
        for request in requests:
            user = request.messages[-1].content
            key = next(question for question in self.outputs if f"\n{question}\n" in user)
            attempt = request.seed or 0
            results.append(GenerateResult(self.outputs[key][attempt], self.name, self.model_id, Usage(7, 3)))
        return results


def test_generative_simulator_retries_then_records_invalid_answers():
    other = MCQuestion("Which is a fruit?", ("stone", "apple"), 1, "en")
    generator = Replies({
        CAPITAL.question: ["I think Paris.", '{"final_answer": "Paris"}'],  # right on the second attempt
        other.question: ["no idea", '{"final_answer": "pear"}', '{"final_answer": "banana"}'],  # never valid
    })
    simulator = GenerativeSimulator("scripted", StructuredClient(generator, max_attempts=3, temperature=0.001))
    assert isinstance(simulator, Simulator)
    first, second = simulator.answer([CAPITAL, other])
    assert first == SimAnswer(1, '{"final_answer": "Paris"}', None, seed=1)  # the second attempt's seed
    assert second.choice is None and second.raw == '{"final_answer": "banana"}'
    assert second.error == "final_answer 'banana' is not one of the 2 choices"
    # 2 calls for the first question, 3 for the second; retries carry the note, the first attempt is verbatim
    assert len(generator.seen) == 5 and simulator.client.meter.calls == 5
    assert generator.seen[0].messages[-1].content == answer_prompt(CAPITAL)
    assert generator.seen[2].messages[-1].content.endswith("exactly one of the choices.")
    assert all(request.temperature == 0.001 and request.json_schema is None for request in generator.seen)


def test_a_chat_model_from_a_pool_answers_with_its_roles_own_settings():
    pool = ClientPool.over(None)
    pool.adopt("chat", Replies({}))
    role = Role(temperature=0.001, max_tokens=1024, seed=3, max_attempts=2)
    simulator = GenerativeSimulator.from_pool("chat", pool, "chat", role)
    assert simulator.prompt_format == "chat" and simulator.client is pool.client("chat", role)


def test_the_completion_form_lists_solved_examples_then_the_question_ending_at_answer():
    prompt = completion_answer_prompt(CAPITAL)
    assert prompt.startswith("Question: Which of these animals can fly?\nA. dog\nB. sparrow\n")
    assert prompt.count("\nAnswer: ") == 3 and {"Answer: B", "Answer: A", "Answer: D"} <= set(prompt.split("\n"))
    assert prompt.endswith("\n\nQuestion: What is the capital of France?\nA. Berlin\nB. Paris\nC. Madrid\nD. Rome\n"
                           "Answer:")


@pytest.mark.parametrize(
    ("text", "expected"),
    [  # outputs as a base model writes them after "Answer:" (the stop string cut them at the newline)
        (" B", (1, None)),
        (" D. Rome", (3, None)),
        (" (C)", (2, None)),
        ("A", (0, None)),
        (" B, because Paris is the capital", (1, None)),
        (" Paris", (None, "no option letter at the start of the output: 'Paris'")),
        (" b", (None, "no option letter at the start of the output: 'b'")),
        (" E", (None, "letter E is past the 4 choices (A-D)")),
        ("   ", (None, "empty output")),
        (" The answer is B", (None, "no option letter at the start of the output: 'The answer is B'")),
    ],
)
def test_letter_extraction(text, expected):
    assert extract_letter(text, CAPITAL.choices) == expected


class Completions:
    """A base-model Generator (completion form) that answers each prompt's last question from a list of outputs,
    one per attempt (the attempt read from the seed)."""

    name, model_id, prompt_format = "scripted", "base", "completion"

    def __init__(self, outputs: dict[str, list[str]]):
        self.outputs = outputs
        self.seen: list[GenerateRequest] = []

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        self.seen.extend(requests)
        last = [request.prompt.rsplit("Question: ", 1)[1].split("\n", 1)[0] for request in requests]
        return [GenerateResult(self.outputs[q][request.seed or 0], self.name, self.model_id, Usage(40, 2))
                for q, request in zip(last, requests, strict=True)]


def test_a_base_model_answers_by_letter_greedy_short_and_stopped_at_the_newline():
    other = MCQuestion("Which is a fruit?", ("stone", "apple"), 1, "en")
    generator = Completions({CAPITAL.question: [" B"],
                             other.question: [" I like fruit", " C", " the apple"]})  # never a valid letter
    pool = ClientPool.over(None)
    pool.adopt("base", generator)
    simulator = GenerativeSimulator.from_pool("base", pool, "base", Role(max_attempts=3, temperature=0.001,
                                                                        max_tokens=1024))
    client = simulator.client  # the letter form's: greedy, at most LETTER_MAX_TOKENS
    assert simulator.prompt_format == "completion"
    assert (client.temperature, client.max_tokens) == (0.0, LETTER_MAX_TOKENS)
    first, second = simulator.answer([CAPITAL, other])
    assert first == SimAnswer(1, " B", None, seed=0)
    assert second.choice is None and second.raw == " the apple"  # invalid, recorded: never counted wrong
    assert second.error == "no option letter at the start of the output: 'the apple'"
    assert len(generator.seen) == 4 and client.meter.calls == 4  # the simulator's one meter counts them
    assert all(not r.messages and r.stop == ("\n",) and r.max_tokens == LETTER_MAX_TOKENS for r in generator.seen)
    assert generator.seen[0].prompt == completion_answer_prompt(CAPITAL) and generator.seen[0].temperature == 0.0
    assert {r.temperature for r in generator.seen[2:]} == {RETRY_TEMPERATURE}  # retries sample


@pytest.mark.slow
@pytest.mark.skipif(not ARC_EASY.exists(), reason=f"{ARC_EASY} is not present")
def test_the_embedded_base_model_answers_a_released_question_by_letter(embedded_generator):
    question = read_source_file(ARC_EASY).questions[1].question  # "A hiker wants to know if air is warmer ..."
    pool = ClientPool.over(None)
    pool.adopt("default", embedded_generator)
    simulator = GenerativeSimulator.from_pool("default", pool, "default", Role(max_attempts=2))
    (answer,) = simulator.answer([question])
    assert simulator.prompt_format == "completion" and simulator.client.meter.calls >= 1
    assert answer.choice in range(len(question.choices)), answer
    assert extract_letter(answer.raw, question.choices) == (answer.choice, None)


def _lm_eval_sums(scorer, question: MCQuestion) -> list[float]:
    """A plain re-implementation of lm-eval's acc: summed log-probability of ' choice' after the prompt."""
    context = f"Question: {question.question}\nAnswer:"
    results = scorer.score([ScoreRequest(context, " " + choice) for choice in question.choices])
    return [result.logprob_sum for result in results]


@pytest.mark.slow
def test_loss_simulator_picks_the_most_likely_option(embedded_scorer):
    japanese = MCQuestion("日本の首都はどこですか？", ("大阪", "東京", "京都"), 1, "ja")
    broken = MCQuestion("Which?", ("a", " "), 0, "en")  # an empty choice: invalid, not an error
    simulator = LossSimulator("default", embedded_scorer)
    answers = simulator.answer([CAPITAL, broken, japanese])
    for question, answer in ((CAPITAL, answers[0]), (japanese, answers[2])):
        sums = _lm_eval_sums(embedded_scorer, question)
        assert answer == SimAnswer(max(range(len(sums)), key=lambda i: (sums[i], -i)), None, None)
        assert all(math.isfinite(value) for value in sums)
    assert answers[0].choice == 1  # Paris
    assert answers[1].choice is None and "not a valid question" in answers[1].error
