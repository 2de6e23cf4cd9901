"""Multi-LLM fact detection: the answer fields in Appendix A.1's order (P(yes) read before any reasoning) or the
reasoning first, the paper's keep rules, the final-triple rule."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import ValidationError

from crossknow.adaxeval.facts import (
    FactAnswer,
    FactAnswerReasoningFirst,
    KeepRule,
    choose_triple,
    default_threshold,
    fact_rows,
)
from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.records import CallInfo, DetectorVote, SentenceRecord, Triple
from crossknow.generation.structured import StructuredClient
from crossknow.models.generator import GenerateResult, Usage

from .fake_llm import FakeLLM, yes_logprobs

SENTENCE = SentenceRecord(
    id="d#0", doc_id="d", pair_id="p", lang="en", index=0, text="Metformin suppresses hepatic gluconeogenesis."
)
GROUNDED = {"subject": "Metformin", "relation": "suppresses", "object": "hepatic gluconeogenesis"}
REASONING = 'It names a drug and what it suppresses; a reader could write \\"factuality\\": \\"no\\" wrongly.'
"""A reasoning whose JSON text holds an escaped `"factuality": "no"`: it must not be taken for the answer."""


def answer_text(answer: str, triple: dict | None = GROUNDED, fields: list[str] | None = None) -> str:
    """A detector's JSON answer with its fields in the order `fields` names (default: the reasoning first)."""
    values = {"reasoning": "REASONING", "factuality": answer, "triple": triple if answer == "yes" else None}
    body = {name: values[name] for name in fields or ["reasoning", "factuality", "triple"]}
    return json.dumps(body).replace('"REASONING"', f'"{REASONING}"')


def in_schema_order(request) -> str:
    """A "yes" answer written in the field order of the request's JSON schema, as a constrained decoder writes it."""
    return answer_text("yes", fields=list(request.json_schema["anyOf"][0]["properties"]))


def detector(answer: str | None, p_yes: float | None = None, triple: dict | None = GROUNDED) -> StructuredClient:
    """A detector that answers `answer` ('yes', 'no', 'junk', or None for a transport failure), with
    log-probabilities giving P(yes) = p_yes when given."""

    def respond(user, request):
        if answer is None:
            return None
        if answer == "junk":
            return "I think it is a fact."
        text = answer_text(answer, triple)
        logprobs = yes_logprobs(text, p_yes) if p_yes is not None else None
        return GenerateResult(text=text, backend="fake", model_id="m", usage=Usage(10, 5), logprobs=logprobs)

    return StructuredClient(FakeLLM(answers={"FactAnswer": respond}), max_attempts=2)


def run(*clients: StructuredClient, rule: str = "sum", threshold: float | None = None, min_yes: int = 2):
    detectors = [(f"d{k}", client) for k, client in enumerate(clients)]
    limit = default_threshold(len(clients)) if threshold is None else threshold
    return fact_rows([SENTENCE], detectors, PromptTable.load(), KeepRule(rule, limit, min_yes))[0]


def test_three_confident_detectors_keep_the_sentence_and_their_reasoning():
    row = run(detector("yes", 0.9), detector("yes", 0.8), detector("yes", 0.7))
    assert row.status == "kept" and row.record.dropped_by == []
    assert row.record.confidence_sum == pytest.approx(2.4) and row.record.yes_votes == 3
    assert row.record.triple == Triple(**GROUNDED) and row.record.chosen == 0
    # the escaped "factuality": "no" inside the reasoning is not where P(yes) was read
    assert [v.confidence for v in row.record.votes] == pytest.approx([0.9, 0.8, 0.7])
    assert row.record.votes[0].reasoning == REASONING.replace('\\"', '"')
    assert "2.400" in row.note


def test_the_sum_rule_is_the_default_and_differs_from_the_old_combination():
    # Each "no" carries P(yes) 0.6, as when a server's yes mass is split over "yes" and "Yes" (0.3 each)
    # and greedy decoding writes "no" (0.4). Sum 1.0 + 0.6 + 0.6 = 2.2 > 2: the section-3.2 rule keeps the
    # sentence; one yes vote fails A.1's two, so the old rule (both must hold) dropped it.
    voters = (detector("yes", 1.0), detector("no", 0.6), detector("no", 0.6))
    row = run(*voters)
    assert row.status == "kept" and row.record.confidence_sum == pytest.approx(2.2)
    assert (row.record.passes_sum, row.record.passes_votes) == (True, False)
    assert row.record.chosen == 0  # the only yes vote carries the triple
    both = run(*voters, rule="both")
    assert both.status == "dropped" and both.record.dropped_by == ["votes"] and "dropped by votes" in both.note
    assert run(*voters, rule="votes").record.dropped_by == ["votes"]


def test_without_logprobs_the_sum_rule_means_all_three_and_the_votes_rule_two_of_three():
    voters = (detector("yes"), detector("yes"), detector("no"))
    row = run(*voters)
    assert [v.confidence for v in row.record.votes] == [1.0, 1.0, 0.0]
    assert row.status == "dropped" and row.record.dropped_by == ["sum"]  # 2 is not more than 2
    assert run(*voters, rule="votes").status == "kept"
    assert run(*voters, rule="both").record.dropped_by == ["sum"]
    assert run(detector("yes"), detector("yes"), detector("yes")).status == "kept"


def test_a_sentence_failing_both_rules_records_both_and_min_yes_is_capped():
    row = run(detector("yes", 0.9), detector("no", 0.2), detector("no", 0.1), rule="both")
    assert row.status == "dropped" and row.record.dropped_by == ["sum", "votes"]
    assert run(detector("yes", 1.0), detector("no", 0.45), rule="votes").status == "dropped"  # one yes of two
    assert run(detector("yes", 0.9), rule="votes", min_yes=2).status == "kept"  # min_yes capped at 1 detector


def test_passing_the_rule_with_no_yes_vote_is_dropped_as_no_triple():
    row = run(detector("no", 0.8), detector("no", 0.8), detector("no", 0.8))  # sum 2.4, but nobody wrote a triple
    assert row.status == "dropped" and row.record.dropped_by == ["no_triple"] and row.record.passes_sum


def test_invalid_votes_are_recorded_not_counted_as_no():
    row = run(detector("yes", 0.99), detector("yes", 0.99), detector("junk"), threshold=1.5)
    assert row.status == "kept" and "1 invalid vote" in row.note
    junk = row.record.votes[2]
    assert junk.factuality is None and junk.confidence is None and junk.reasoning is None
    assert junk.call.attempts == 2 and junk.call.raw_text == "I think it is a fact." and junk.call.error


def test_all_votes_invalid_is_an_invalid_row_and_a_transport_failure_no_row():
    row = run(detector("junk"), detector("junk"))
    assert row.status == "invalid" and row.record.dropped_by == []
    assert run(detector("yes", 0.9), detector(None)) is None


def test_a_yes_without_a_triple_is_an_invalid_vote_with_the_models_output():
    row = run(detector("yes", 0.9, triple=None), detector("yes", 0.9, triple=None), threshold=1.0)
    assert row.status == "invalid" and "needs a triple" in row.note
    vote = row.record.votes[0]
    assert vote.factuality is None and vote.call.attempts == 2 and '"triple": null' in vote.call.raw_text
    # one detector's null triple does not sink the others' facts
    row = run(detector("yes", 0.9), detector("yes", 0.9, triple=None), detector("yes", 0.9), threshold=1.0)
    assert row.status == "kept" and row.record.yes_votes == 2 and row.record.votes[1].factuality is None


def test_fact_answer_schemas_follow_appendix_a1_or_put_the_reasoning_first_and_tie_yes_to_a_triple():
    orders = {FactAnswer: ["factuality", "triple", "reasoning"], FactAnswerReasoningFirst: ["reasoning", "factuality",
                                                                                             "triple"]}
    for model, order in orders.items():
        with pytest.raises(ValidationError, match="needs a triple"):
            model(reasoning="r", factuality="yes", triple=None)
        assert model(reasoning="r", factuality="no", triple=None).triple is None
        schema = model.model_json_schema()
        yes, no = schema["anyOf"]
        assert yes["properties"]["factuality"]["enum"] == ["yes"] and no["properties"]["factuality"]["enum"] == ["no"]
        assert yes["properties"]["triple"]["$ref"] == "#/$defs/Triple" and no["properties"]["triple"]["type"] == "null"
        for variant in (yes, no):  # the order decides whether P(yes) is read before or after the reasoning
            assert list(variant["properties"]) == order and variant["required"] == order
            assert variant["additionalProperties"] is False
        assert all(schema["$defs"]["Triple"]["properties"][f]["minLength"] == 1 for f in ("subject", "relation",
                                                                                          "object"))


class ScoringFake(FakeLLM):
    """A FakeLLM that also scores continuations of its answers (an AnswerScorer, like the local backends):
    log p('"yes"') = ln 0.3 and log p('"no"') = ln 0.1, whatever the prefix; it keeps what it was asked."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.scored = []

    def score_answers(self, requests):
        self.scored += list(requests)
        return [math.log(0.3) if r.continuation == '"yes"' else math.log(0.1) for r in requests]


def test_by_default_p_yes_is_scored_at_the_factuality_field_before_any_reasoning():
    fake = ScoringFake(answers={"FactAnswer": lambda user, request: in_schema_order(request)})
    client = StructuredClient(fake, max_attempts=1)
    row = fact_rows([SENTENCE], [("d0", client)], PromptTable.load(), KeepRule("sum", 0.5, 1))[0]
    assert row.record.votes[0].confidence == pytest.approx(0.3 / (0.3 + 0.1))
    assert row.record.votes[0].reasoning == REASONING.replace('\\"', '"')  # the reason, written after the answer
    # by hand: the answer opens with the factuality field, so the two values are scored right after '{"factuality": '
    assert {request.answer_prefix for request in fake.scored} == {'{"factuality": '}
    assert {request.continuation for request in fake.scored} == {'"yes"', '"no"'}
    # the prompt lists A.1's fields in its order, and its examples answer in that order
    prompt = fake.requests[0].messages[-1].content
    assert prompt.index('- "factuality"') < prompt.index('- "triple"') < prompt.index('- "reasoning"')
    examples = [line for line in prompt.splitlines() if line.startswith("{")]
    assert len(examples) == 2 and all(line.startswith('{"factuality": "') for line in examples)


def test_reasoning_first_is_an_option_and_its_p_yes_is_scored_after_the_reasoning():
    fake = ScoringFake(answers={"FactAnswerReasoningFirst": lambda user, request: in_schema_order(request)})
    client = StructuredClient(fake, max_attempts=1)
    rule = KeepRule("sum", 0.5, 1)
    row = fact_rows([SENTENCE], [("d0", client)], PromptTable.load(), rule, "reasoning_first")[0]
    assert row.record.votes[0].confidence == pytest.approx(0.3 / (0.3 + 0.1))
    prefixes = {request.answer_prefix for request in fake.scored}
    expected = answer_text("yes").split('"factuality": ')[0] + '"factuality": '  # by hand: all text before the value
    assert prefixes == {expected} and REASONING in expected
    prompt = fake.requests[0].messages[-1].content
    assert prompt.index('- "reasoning"') < prompt.index('- "factuality"') < prompt.index('- "triple"')


def _vote(confidence: float, subject: str, obj: str, answer: str = "yes") -> DetectorVote:
    call = CallInfo(model="m", attempts=1, cached=False, prompt_tokens=0, completion_tokens=0, cost_usd=0.0)
    triple = Triple(subject=subject, relation="r", object=obj) if answer == "yes" else None
    return DetectorVote(detector="m", factuality=answer, confidence=confidence, triple=triple, reasoning="", call=call)


def test_final_triple_is_the_top_confident_one_then_grounding_agreement_order():
    text = "Metformin suppresses hepatic gluconeogenesis."
    full = "hepatic gluconeogenesis"
    # the most confident detector's triple wins, even when a less confident one is better grounded
    assert choose_triple(text, [_vote(0.99, "metformin", "glucose output"), _vote(0.6, "Metformin", full)]) == 0
    # equal confidence: the better grounded wins
    assert choose_triple(text, [_vote(1.0, "Metformin", "glucose output"), _vote(1.0, "Metformin", full)]) == 1
    # equal confidence and grounding: the triple the others agree with wins
    votes = [_vote(0.9, "Metformin", "hepatic"), _vote(0.9, "Metformin", "hepatic gluconeogenesis"),
             _vote(0.9, "Metformin", "gluconeogenesis")]
    assert choose_triple(text, votes) == 1
    # a full tie: the first detector
    assert choose_triple(text, [_vote(0.9, "Metformin", "gluconeogenesis")] * 2) == 0
    # no vote says yes
    assert choose_triple(text, [_vote(0.1, "", "", answer="no")]) is None
