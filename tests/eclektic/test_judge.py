"""The strict verdict parser on hand-labelled outputs, judging through the client (scripted judges:
the real server is judged in test_answer.py), invalid verdicts kept null, majority vote, agreement."""

from __future__ import annotations

import pyarrow as pa
import pytest

from crossknow.eclektic.agreement import judge_agreement
from crossknow.eclektic.answer import answer_questions
from crossknow.eclektic.examples import EclekticSet, Question
from crossknow.eclektic.judge import (
    CORRECTNESS_SCHEMA,
    JUDGE_RETRY_NOTE,
    JUDGEMENT_SCHEMA,
    JudgementRow,
    judge_answers,
    majority_vote,
    parse_verdict,
)
from crossknow.errors import CrossknowError
from crossknow.generation.structured import StructuredClient
from crossknow.store.request_cache import RequestCache

from .scripted import Scripted, two_question_set

# (output, expected verdict: True = YES, False = NO, None = invalid), labelled by hand.
LABELLED = [
    ("YES", True),  # the single word
    ("Yes.", True),  # case and one trailing period are tolerated
    ("no", False),
    ("  NO \n", False),  # surrounding whitespace
    ("**YES**", True),  # markdown emphasis
    ('"No".', False),  # quotes, then the period
    ("`yes`", True),  # code ticks
    ("NO.", False),
    ("NO - because the text gives another year", None),  # more than one word: the prompt asks for one
    ("", None),  # empty
    ("   ", None),
    ("I think yes", None),  # a sentence, even one ending in YES
    ("Yes, but the text does not say so.", None),  # would be misread by a first-word parser
    ("YES!", None),  # only a period is tolerated
    ("Yes..", None),  # one period, not two
    ("YES YES", None),
    ("Output: YES", None),  # the prompt's last line echoed
    ("Y", None),
    ("はい", None),  # the output must be English
]


@pytest.mark.parametrize(("output", "expected"), LABELLED)
def test_parse_verdict_on_hand_labelled_outputs(output, expected):
    verdict, error = parse_verdict(output)
    assert verdict is expected
    assert (error is None) == (expected is not None)


def test_parse_verdict_says_why():
    assert parse_verdict(" \n") == (None, "empty output")
    assert parse_verdict("I think yes") == (None, "not a single YES or NO: 'I think yes'")


def answers_of(eclektic_set: EclekticSet) -> pa.Table:
    """Closed-book answers by a scripted model: the gold answer, except q2 in ja, which stays empty."""
    def reply(user: str, seed: int) -> str:
        for row in eclektic_set.questions:
            if row.question == user:
                return "" if (row.q_id, row.lang) == ("q2", "ja") else row.answer
        raise AssertionError(user)

    return answer_questions(eclektic_set, StructuredClient(Scripted(reply)), model="scripted:m")


def test_judges_see_the_target_language_and_invalid_verdicts_stay_null(tmp_path):
    eclektic_set = two_question_set()
    answers = answers_of(eclektic_set)
    says_yes = Scripted(lambda user, seed: "Yes.", model_id="yes")
    never_valid = Scripted(lambda user, seed: "I think yes", model_id="junk")
    cache = RequestCache(tmp_path / "cache.sqlite")
    judges = {"openai:yes": StructuredClient(says_yes, cache), "openai:junk": StructuredClient(never_valid, cache)}
    progress: list[tuple[int, int]] = []
    judgements = judge_answers(answers, eclektic_set, judges, batch_size=2,
                               on_progress=lambda done, total, meter: progress.append((done, total)))
    assert judgements.schema == JUDGEMENT_SCHEMA and JUDGEMENT_SCHEMA.names == list(JudgementRow.model_fields)
    rows = {(r["q_id"], r["lang"], r["judge"]): r for r in judgements.to_pylist()}
    assert len(rows) == 4 * 2

    # the judge prompt is filled in the answer's language: Japanese context, question and answer
    prompt = says_yes.requests[0].messages
    assert [m.role for m in prompt] == ["user"]
    assert "**Input (in Japanese):**" in prompt[0].content
    assert ("Text:\n清水寺の本堂は1633年に再建された。\n\nQuestion:\n清水寺の本堂はいつ再建されましたか？\n\n"
            "Answer:\n1633年\n\nOutput:") in prompt[0].content
    english = rows["q1", "en", "openai:yes"]
    assert (english["verdict"], english["raw"], english["error"], english["attempts"]) == (True, "Yes.", None, 1)

    # the invalid judge was retried (with the one-word note), then recorded null, never NO
    junk = rows["q1", "en", "openai:junk"]
    assert junk["verdict"] is None and junk["attempts"] == 3 and junk["raw"] == "I think yes"
    assert junk["error"] == "not a single YES or NO: 'I think yes'"
    retried = [r.messages[0].content for r in never_valid.requests if r.messages[0].content.endswith(JUDGE_RETRY_NOTE)]
    assert len(retried) == 3 * 2  # attempts 2 and 3 of each of the 3 valid answers

    # the empty answer was not sent to a judge: it is wrong, NO from every judge
    empty = rows["q2", "ja", "openai:yes"]
    assert (empty["verdict"], empty["attempts"], empty["error"]) == (False, 0, None)
    assert rows["q2", "ja", "openai:junk"]["verdict"] is False
    assert len(says_yes.requests) == 3
    assert progress == [(0, 6), (2, 6), (3, 6), (5, 6), (6, 6)]

    votes = {(r["q_id"], r["lang"]): r for r in majority_vote(judgements).to_pylist()}
    assert votes["q1", "en"] == {"q_id": "q1", "source_lang": "ja", "lang": "en", "sample": 0, "correct": True,
                                 "n_judges": 2, "n_valid": 1}  # one YES, one invalid: YES, not a tie
    assert votes["q2", "ja"]["correct"] is False and votes["q2", "ja"]["n_valid"] == 2

    # judged again from the same cache: nothing is asked, the same verdicts
    cache = RequestCache(tmp_path / "cache.sqlite")
    again = {spec: StructuredClient(Scripted(lambda u, s: pytest.fail("cached"), model_id=spec[7:]), cache)
             for spec in judges}
    replayed = judge_answers(answers, eclektic_set, again)
    assert replayed.column("verdict").to_pylist() == judgements.column("verdict").to_pylist()
    assert sum(c.meter.calls for c in again.values()) == 0


def test_a_question_row_without_context_cannot_be_judged_by_an_llm():
    bare = EclekticSet("bare", "main", [Question("q", "en", "en", "Who?", "Her", None, None, None)], {"q": ("en",)})
    answers = answer_questions(bare, StructuredClient(Scripted(lambda u, s: "Her")), model="m")
    judge = StructuredClient(Scripted(lambda u, s: pytest.fail("no call before the check")))
    with pytest.raises(CrossknowError, match=r"1 question rows have no context.*q \(en\)"):
        judge_answers(answers, bare, {"openai:j": judge})
    with pytest.raises(CrossknowError, match="no judges"):
        judge_answers(answers, bare, {})


def test_majority_vote_on_a_constructed_table():
    # (q_id, lang, sample) -> verdicts of judges a, b, c (None = invalid); the expected votes by hand
    verdicts = {
        ("q1", "en", 0): (True, True, False),  # 2 YES vs 1 NO -> correct
        ("q1", "ja", 0): (False, None, False),  # 0 vs 2 -> incorrect, 2 valid
        ("q1", "ja", 1): (True, False, None),  # 1 vs 1: a tie -> undecided
        ("q2", "en", 0): (None, None, None),  # nothing valid -> undecided, never incorrect
        ("q2", "de", 0): (True, None, None),  # 1 vs 0 -> correct on one valid verdict
    }
    source = {"q1": "ja", "q2": "en"}
    rows = [
        JudgementRow(q_id=q_id, lang=lang, source_lang=source[q_id], sample=sample, judge=judge, verdict=verdict,
                     raw="", error=None if verdict is not None else "x", attempts=1, cached=False,
                     cost_usd=0.0).model_dump()
        for (q_id, lang, sample), triple in verdicts.items()
        for judge, verdict in zip("abc", triple, strict=True)
    ]
    votes = majority_vote(pa.Table.from_pylist(rows, schema=JUDGEMENT_SCHEMA))
    assert votes.schema == CORRECTNESS_SCHEMA
    assert [(r["q_id"], r["lang"], r["sample"], r["correct"], r["n_judges"], r["n_valid"])
            for r in votes.to_pylist()] == [
        ("q1", "en", 0, True, 3, 3),
        ("q1", "ja", 0, False, 3, 2),
        ("q1", "ja", 1, None, 3, 2),
        ("q2", "en", 0, None, 3, 0),
        ("q2", "de", 0, True, 3, 1),
    ]
    # the judges' agreement comes from crossknow.eclektic.agreement on the same table: Fleiss' kappa
    # over the items with two or more valid verdicts (q1/en, q1/ja/0, q1/ja/1), computed by hand:
    # P_i = 1/3, 1, 0 -> P = 4/9; their ratings: 3 YES, 4 NO of 7 -> P_e = (9 + 16) / 49 = 25/49
    agreement = judge_agreement(pa.Table.from_pylist(rows, schema=JUDGEMENT_SCHEMA))
    assert agreement.method == "fleiss" and (agreement.n_items, agreement.n_left_out) == (3, 2)
    assert agreement.kappa == pytest.approx((4 / 9 - 25 / 49) / (1 - 25 / 49))


def test_an_empty_source_answer_is_wrong_and_keeps_its_question_in_the_averages():
    """q1's source-language (ja) answer is empty, every other answer is the gold one. The empty answer is
    wrong, so q1 stays in D with S = 0: overall 1/2 over the two translated rows, not 1/1 (which an
    empty answer taken as invalid would give, dropping q1 and raising the score)."""
    from crossknow.eclektic.judge_free import judge_by_recall
    from crossknow.eclektic.metrics import eclektic_metrics

    eclektic_set = two_question_set()

    def reply(user: str, seed: int) -> str:
        row = next(row for row in eclektic_set.questions if row.question == user)
        return "" if (row.q_id, row.lang) == ("q1", "ja") else row.answer

    answers = answer_questions(eclektic_set, StructuredClient(Scripted(reply)), model="scripted:m")
    correctness = {(r["q_id"], r["lang"]): r["correct"] for r in majority_vote(judge_by_recall(answers, eclektic_set))
                   .to_pylist()}
    assert correctness == {("q1", "ja"): False, ("q1", "en"): True, ("q2", "en"): True, ("q2", "ja"): True}
    metrics = eclektic_metrics(majority_vote(judge_by_recall(answers, eclektic_set)), source_rows="exclude")
    assert (metrics.overall.numerator, metrics.overall.n, metrics.n_invalid) == (1, 2, 0)
    assert (metrics.transfer.numerator, metrics.transfer.n) == (1, 1)
