"""Multi-LLM fact detection: P(yes) from log-probabilities, the keep rule, the final-triple rule."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from crossknow.adaxeval.facts import FactAnswer, choose_triple, default_threshold, fact_rows
from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.records import CallInfo, DetectorVote, SentenceRecord, Triple
from crossknow.generation.structured import StructuredClient
from crossknow.models.generator import GenerateResult, Usage

from .fake_llm import FakeLLM, yes_logprobs

SENTENCE = SentenceRecord(
    id="d#0", doc_id="d", pair_id="p", lang="en", index=0, text="Metformin suppresses hepatic gluconeogenesis."
)
GROUNDED = {"subject": "Metformin", "relation": "suppresses", "object": "hepatic gluconeogenesis"}


def detector(answer: str | None, p_yes: float | None = None, triple: dict | None = GROUNDED) -> StructuredClient:
    """A detector that answers `answer` ('yes', 'no', 'junk', or None for a transport failure), with
    log-probabilities giving P(yes) = p_yes when given."""

    def respond(user, request):
        if answer is None:
            return None
        if answer == "junk":
            return "I think it is a fact."
        text = json.dumps({"factuality": answer, "triple": triple if answer == "yes" else None, "reason": "r"})
        logprobs = yes_logprobs(text, p_yes) if p_yes is not None else None
        return GenerateResult(text=text, backend="fake", model_id="m", usage=Usage(10, 5), logprobs=logprobs)

    return StructuredClient(FakeLLM(answers={"FactAnswer": respond}), max_attempts=2)


def run(*clients: StructuredClient, threshold: float | None = None, min_yes: int = 2):
    detectors = [(f"d{k}", client) for k, client in enumerate(clients)]
    limit = default_threshold(len(clients)) if threshold is None else threshold
    return fact_rows([SENTENCE], detectors, PromptTable.load(), limit, min_yes)[0]


def test_paper_rule_three_confident_detectors_keep_the_sentence():
    row = run(detector("yes", 0.9), detector("yes", 0.8), detector("yes", 0.7))
    assert row.status == "kept"
    assert row.record.confidence_sum == pytest.approx(2.4) and row.record.yes_votes == 3
    assert row.record.triple == Triple(**GROUNDED) and row.record.chosen == 0
    assert [v.confidence for v in row.record.votes] == pytest.approx([0.9, 0.8, 0.7])
    assert "2.400" in row.note


def test_summed_confidence_must_exceed_the_threshold():
    row = run(detector("yes", 0.9), detector("yes", 0.6), detector("no", 0.4))
    assert row.status == "dropped" and row.record.triple is None
    assert row.record.confidence_sum == pytest.approx(1.9)


def test_two_yes_votes_are_needed_even_above_the_threshold():
    row = run(detector("yes", 1.0), detector("no", 0.45))  # 1.45 > 4/3, but one yes
    assert row.status == "dropped"
    assert run(detector("yes", 1.0), detector("no", 0.45), min_yes=1).status == "kept"


def test_without_logprobs_the_answer_counts_one_or_zero():
    row = run(detector("yes"), detector("yes"), detector("no"))
    assert [v.confidence for v in row.record.votes] == [1.0, 1.0, 0.0]
    assert row.status == "dropped"  # 2 is not more than 2


def test_invalid_votes_are_recorded_not_counted_as_no():
    row = run(detector("yes", 0.99), detector("yes", 0.99), detector("junk"), threshold=1.5)
    assert row.status == "kept" and "1 invalid vote" in row.note
    junk = row.record.votes[2]
    assert junk.factuality is None and junk.confidence is None
    assert junk.call.attempts == 2 and junk.call.raw_text == "I think it is a fact." and junk.call.error


def test_all_votes_invalid_is_an_invalid_row_and_a_transport_failure_no_row():
    assert run(detector("junk"), detector("junk")).status == "invalid"
    assert run(detector("yes", 0.9), detector(None)) is None


def test_a_yes_without_a_triple_is_an_invalid_vote_with_the_models_output():
    row = run(detector("yes", 0.9, triple=None), detector("yes", 0.9, triple=None), threshold=1.0)
    assert row.status == "invalid" and "needs a triple" in row.note
    vote = row.record.votes[0]
    assert vote.factuality is None and vote.call.attempts == 2 and '"triple": null' in vote.call.raw_text
    # one detector's null triple does not sink the others' facts
    row = run(detector("yes", 0.9), detector("yes", 0.9, triple=None), detector("yes", 0.9), threshold=1.0)
    assert row.status == "kept" and row.record.yes_votes == 2 and row.record.votes[1].factuality is None


def test_fact_answer_schema_ties_yes_to_a_triple_and_no_to_null():
    with pytest.raises(ValidationError, match="needs a triple"):
        FactAnswer(factuality="yes", triple=None, reason="r")
    assert FactAnswer(factuality="no", triple=None, reason="r").triple is None
    schema = FactAnswer.model_json_schema()
    yes, no = schema["anyOf"]
    assert yes["properties"]["factuality"]["enum"] == ["yes"] and no["properties"]["factuality"]["enum"] == ["no"]
    assert yes["properties"]["triple"]["$ref"] == "#/$defs/Triple" and no["properties"]["triple"]["type"] == "null"
    for variant in (yes, no):  # field order kept: the confidence is scored right after "factuality"
        assert list(variant["properties"]) == ["factuality", "triple", "reason"]
        assert variant["required"] == ["factuality", "triple", "reason"] and variant["additionalProperties"] is False
    assert all(schema["$defs"]["Triple"]["properties"][f]["minLength"] == 1 for f in ("subject", "relation", "object"))


def _vote(confidence: float, subject: str, obj: str, answer: str = "yes") -> DetectorVote:
    call = CallInfo(model="m", attempts=1, cached=False, prompt_tokens=0, completion_tokens=0, cost_usd=0.0)
    triple = Triple(subject=subject, relation="r", object=obj) if answer == "yes" else None
    return DetectorVote(detector="m", factuality=answer, confidence=confidence, triple=triple, reason="", call=call)


def test_final_triple_grounding_first_then_confidence_then_agreement_then_order():
    text = "Metformin suppresses hepatic gluconeogenesis."
    # grounded subject and object beat a more confident ungrounded triple
    full = "hepatic gluconeogenesis"
    assert choose_triple(text, [_vote(0.99, "metformin", "glucose output"), _vote(0.6, "Metformin", full)]) == 1
    # equal grounding: the more confident wins
    assert choose_triple(text, [_vote(0.7, "Metformin", "gluconeogenesis"), _vote(0.9, "Metformin", full)]) == 1
    # equal grounding and confidence: the triple the others agree with wins
    votes = [_vote(0.9, "Metformin", "hepatic"), _vote(0.9, "Metformin", "hepatic gluconeogenesis"),
             _vote(0.9, "Metformin", "gluconeogenesis")]
    assert choose_triple(text, votes) == 1
    # a full tie: the first detector
    assert choose_triple(text, [_vote(0.9, "Metformin", "gluconeogenesis")] * 2) == 0
    # no vote says yes
    assert choose_triple(text, [_vote(0.1, "", "", answer="no")]) is None
