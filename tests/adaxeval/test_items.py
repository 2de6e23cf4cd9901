"""Query crafting, distractors, quality filters and assembly, stage by stage on hand-made records."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from crossknow.adaxeval.assemble import option_seed, shuffled_options, write_dataset
from crossknow.adaxeval.distractors import DistractorAnswer, distractor_rows, length_cues, screen_options
from crossknow.adaxeval.filters import quality_rows
from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.queries import QueryAnswer, cloze_similarity, query_rows
from crossknow.adaxeval.records import CallInfo, FactRecord, SentenceRecord, Triple
from crossknow.data.formats import load_item_set
from crossknow.generation.structured import StructuredClient

from .fake_llm import FakeLLM

PROMPTS = PromptTable.load()
CALL = CallInfo(model="m", attempts=1, cached=False, prompt_tokens=0, completion_tokens=0, cost_usd=0.0)


def fact(text: str = "Insulin lowers the blood glucose level.", obj: str = "the blood glucose level",
         lang: str = "en", key: str = "d-en#0") -> FactRecord:
    doc_id, _, index = key.partition("#")
    sentence = SentenceRecord(id=key, doc_id=doc_id, pair_id="p", lang=lang, index=int(index), text=text)
    triple = Triple(subject="Insulin", relation="lowers", object=obj)
    return FactRecord(sentence=sentence, votes=[], confidence_sum=3.0, yes_votes=3, triple=triple, chosen=0)


def writer(**answers) -> tuple[str, StructuredClient]:
    return ("w", StructuredClient(FakeLLM(answers=answers), max_attempts=2))


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"cloze": "Insulin lowers [BLANK] and [BLANK]."}, "exactly one [BLANK], found 2"),
        ({"cloze": "Insulin lowers it."}, "exactly one [BLANK], found 0"),
        ({"question": "What does insulin lower, [BLANK]?"}, "must not hold [BLANK]"),
        ({"question": "Does insulin lower the blood glucose level?"}, "gives the answer away"),
        ({"answer": "  "}, "must not be empty"),
        ({"blanked": "verb"}, "blanked"),
    ],
)
def test_query_output_is_validated(fields, words):
    good = {"cloze": "Insulin lowers [BLANK].", "blanked": "object", "question": "What does insulin reduce?",
            "answer": "the blood glucose level"}
    with pytest.raises(ValidationError, match=words.replace("[", r"\[").replace("]", r"\]")):
        QueryAnswer.model_validate(good | fields)


VALID_QUERY = json.dumps({"cloze": "Insulin lowers [BLANK].", "blanked": "object",
                          "question": "What does insulin reduce?", "answer": "the blood glucose level"})


def test_queries_stage_keeps_valid_answers_and_measures_closeness():
    rows = query_rows([fact()], writer(QueryAnswer=lambda user, request: VALID_QUERY), PROMPTS)
    assert rows[0].status == "kept" and rows[0].record.answer == "the blood glucose level"
    assert rows[0].record.cloze_similarity == cloze_similarity(
        "Insulin lowers [BLANK].", "the blood glucose level", "Insulin lowers the blood glucose level.")
    assert rows[0].record.cloze_similarity == 1.0  # the filled cloze is the sentence


def test_queries_stage_retries_then_records_invalid_output():
    no_blank = json.loads(VALID_QUERY) | {"cloze": "Insulin lowers it."}
    answers = {"QueryAnswer": lambda user, request: json.dumps(no_blank)}
    rows = query_rows([fact()], ("w", StructuredClient(FakeLLM(answers=answers), max_attempts=3)), PROMPTS)
    assert rows[0].status == "invalid" and rows[0].record.call.attempts == 3
    assert "exactly one [BLANK]" in rows[0].note and rows[0].record.call.raw_text == json.dumps(no_blank)
    # a retry that succeeds is kept
    flaky = {"QueryAnswer": lambda user, request: VALID_QUERY if request.seed == 1 else json.dumps(no_blank)}
    row = query_rows([fact()], ("w", StructuredClient(FakeLLM(answers=flaky), max_attempts=3)), PROMPTS)[0]
    assert row.status == "kept" and row.record.call.attempts == 2


def test_distractor_validation_and_length_cues():
    with pytest.raises(ValidationError, match="at least 3"):
        DistractorAnswer(distractors=["a", "b"])
    expected = (pytest.approx(26 / 3 / 7, abs=1e-4), False)
    assert length_cues("insulin", ["glucagon", "cortisol", "adrenaline"]) == expected
    assert length_cues("a much longer answer", ["x", "yy", "zzz"])[1] is True


def test_options_equal_to_the_answer_empty_or_repeated_are_dropped_with_the_reason():
    good, dropped = screen_options("blood glucose", ["Blood  Glucose.", " ", "glucagon", "GLUCAGON", "cortisol "],
                                   kept=["Cortisol"], round_=1)
    assert good == ["glucagon"]
    assert [(d.text, d.reason, d.round) for d in dropped] == [
        ("Blood  Glucose.", "equals the answer", 1), (" ", "empty", 1), ("GLUCAGON", "duplicate", 1),
        ("cortisol ", "duplicate", 1),
    ]


def _query():
    from crossknow.adaxeval.records import QueryRecord

    return QueryRecord(fact=fact(), cloze="Insulin lowers [BLANK].", question="What does insulin reduce?",
                       answer="blood glucose", blanked="object", cloze_similarity=0.9, call=CALL)


def test_dropped_distractors_are_asked_for_again_and_the_item_still_comes_out():
    def respond(user, request):
        if "could not be used" not in user:
            return json.dumps({"distractors": ["Blood glucose.", "blood pressure", "blood pressure"]})
        return json.dumps({"distractors": ["blood pressure", "heart rate", "body weight"]})

    spec, client = writer(DistractorAnswer=respond)
    row = distractor_rows([_query()], (spec, client), PROMPTS)[0]
    assert row.status == "kept" and "3 option(s) dropped" in row.note
    assert row.record.distractors == ["blood pressure", "heart rate", "body weight"]
    assert [(d.text, d.reason, d.round) for d in row.record.dropped] == [
        ("Blood glucose.", "equals the answer", 0), ("blood pressure", "duplicate", 0),
        ("blood pressure", "duplicate", 1),
    ]
    second = client.generator.requests[-1].messages[-1].content
    assert '"Blood glucose." (equals the answer)' in second and 'kept so far: "blood pressure"' in second
    assert row.record.call.attempts == 2 and row.record.call.error is None


def test_distractors_that_stay_bad_make_the_item_invalid_with_the_models_output():
    same = writer(DistractorAnswer=lambda u, r: json.dumps({"distractors": ["Blood glucose.", "b", "c"]}))
    row = distractor_rows([_query()], same, PROMPTS)[0]
    assert row.status == "invalid" and "2 of 3 distractors after 2 round(s)" in row.note
    assert row.record.distractors == ["b", "c"] and row.record.call.raw_text.startswith('{"distractors"')
    assert row.record.call.error == row.note
    row = distractor_rows([_query()], writer(), PROMPTS)[0]
    assert row.status == "kept" and len(row.record.distractors) == 3 and row.record.length_ratio > 1
    assert row.record.dropped == [] and row.record.call.attempts == 1


def _item(lang: str = "en", key: str = "d-en#0"):
    from crossknow.adaxeval.records import DistractorRecord, QueryRecord

    query = QueryRecord(fact=fact(lang=lang, key=key), cloze="Insulin lowers [BLANK].",
                        question="What does insulin reduce?", answer="blood glucose", blanked="object",
                        cloze_similarity=0.9, call=CALL)
    return DistractorRecord(query=query, distractors=["blood pressure", "heart rate", "body weight"],
                            length_ratio=0.9, answer_longest=False, call=CALL)


def test_quality_filter_keeps_all_good_with_support_2_unless_turned_off():
    poor = writer(CrossLanguageJudgement=lambda u, r: '{"support": 1}')
    partner = lambda pair_id, lang: ("ja", "インスリンは血糖値を低下させる。")  # noqa: E731
    assert quality_rows([_item()], writer(), PROMPTS, partner, True)[0].status == "kept"
    row = quality_rows([_item()], poor, PROMPTS, partner, True)[0]
    assert row.status == "dropped" and "support 1" in row.note
    assert quality_rows([_item()], poor, PROMPTS, partner, False)[0].status == "kept"
    prompt = PROMPTS.render("quality_cross_language", "en", other_language="Japanese", document="D", question="Q",
                            answer="A").user
    assert "Japanese document: D" in prompt


def test_options_are_shuffled_from_the_seed_and_item_id_only():
    options, answer = shuffled_options("right", ["w1", "w2", "w3"], 0, "d#0")
    assert options[answer] == "right" and sorted(options) == ["right", "w1", "w2", "w3"]
    assert shuffled_options("right", ["w1", "w2", "w3"], 0, "d#0") == (options, answer)
    assert option_seed(0, "d#0") != option_seed(1, "d#0")
    positions = {shuffled_options("right", ["w1", "w2", "w3"], 0, f"d#{k}")[1] for k in range(40)}
    assert positions == {0, 1, 2, 3}


def test_assembled_sets_are_read_by_evaluate(tmp_path):
    from crossknow.adaxeval.records import QualityRecord

    records = [
        QualityRecord(item=_item(lang, f"d-{lang}#0"), cloze="Good", paraphrase="Good", options="Good", support=2,
                      in_language_call=CALL, cross_language_call=CALL)
        for lang in ("en", "ja")
    ]
    files = write_dataset(tmp_path, records, ["en", "ja"], 7, {"p": {"en": "d-en", "ja": "d-ja"}})
    cloze = load_item_set(tmp_path / files["en_memorization"])
    question = load_item_set(tmp_path / files["ja_generalization"])
    assert cloze.format == question.format == "adaxeval" and not cloze.invalid
    assert [(i.id, i.kind, i.lang) for i in cloze.items] == [("cloze:d-en#0", "cloze", "en")]
    assert [(i.id, i.kind, i.lang) for i in question.items] == [("question:d-ja#0", "question", "ja")]
    item = cloze.items[0]
    assert item.options[item.answer] == "blood glucose" and item.metadata["partner_docid"] == "d-ja"
    links = [json.loads(line) for line in (tmp_path / files["interlingual"]).read_text().splitlines()]
    assert links[0] == {"item_id": "d-en#0", "lang": "en", "doc_id": "d-en", "pair_id": "p", "partner_lang": "ja",
                        "partner_doc_id": "d-ja", "support": 2}
