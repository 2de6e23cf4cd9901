"""Query crafting, distractors, quality filters and assembly, stage by stage on hand-made records."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from crossknow.adaxeval.assemble import option_seed, shuffled_options, write_dataset
from crossknow.adaxeval.distractors import DistractorAnswer, distractor_rows, length_cues, screen_options
from crossknow.adaxeval.filters import quality_rows
from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.queries import (
    ClozeAnswer,
    ParaphraseAnswer,
    blank_problem,
    cloze_rows,
    cloze_similarity,
    paraphrase_rows,
)
from crossknow.adaxeval.records import CallInfo, FactRecord, SentenceRecord, Triple, TripleRecord
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
    return FactRecord(sentence=sentence, votes=[], confidence_sum=3.0, yes_votes=3, passes_sum=True,
                      passes_votes=True, triple=triple, chosen=0)


def regenerated(text: str = "Insulin lowers the blood glucose level.", obj: str = "the blood glucose level",
                lang: str = "en", key: str = "d-en#0") -> TripleRecord:
    """A fact whose regenerated triple is the detector's (stage 'triples' is tested in test_triples.py)."""
    detected = fact(text, obj, lang, key)
    return TripleRecord(fact=detected, triple=detected.triple, call=CALL)


def writer(max_attempts: int = 2, **answers) -> tuple[str, StructuredClient]:
    return ("w", StructuredClient(FakeLLM(answers=answers), max_attempts=max_attempts))


def cloze_json(cloze: str) -> str:
    return json.dumps({"reasoning": "The object ends the sentence.", "cloze": cloze})


OBJECT_BLANK = cloze_json("Insulin lowers [BLANK].")
SUBJECT_BLANK = cloze_json("[BLANK] lowers the blood glucose level.")


@pytest.mark.parametrize(
    ("schema", "fields", "words"),
    [
        (ClozeAnswer, {"cloze": "Insulin lowers [BLANK] and [BLANK]."}, "exactly one [BLANK], found 2"),
        (ClozeAnswer, {"cloze": "Insulin lowers it."}, "exactly one [BLANK], found 0"),
        (ClozeAnswer, {"cloze": " [BLANK] "}, "nothing but the blank"),
        (ParaphraseAnswer, {"question": "What does insulin lower, [BLANK]?"}, "must not hold [BLANK]"),
        (ParaphraseAnswer, {"question": "  "}, "must not be empty"),
    ],
)
def test_cloze_and_paraphrase_output_is_validated(schema, fields, words):
    with pytest.raises(ValidationError, match=words.replace("[", r"\[").replace("]", r"\]")):
        schema.model_validate({"reasoning": "r"} | fields)


def test_reasoning_comes_before_the_answer_in_the_schemas():
    assert list(ClozeAnswer.model_json_schema()["properties"]) == ["reasoning", "cloze"]
    assert list(ParaphraseAnswer.model_json_schema()["properties"]) == ["reasoning", "question"]


def test_cloze_stage_blanks_the_object_keeps_the_reasoning_and_measures_closeness():
    spec, client = writer(ClozeAnswer=lambda user, request: OBJECT_BLANK)
    row = cloze_rows([regenerated()], (spec, client), PROMPTS)[0]
    assert row.status == "kept" and row.record.answer == "the blood glucose level"  # the answer is the object
    assert row.record.reasoning == "The object ends the sentence." and row.record.rejected == []
    assert row.record.cloze_similarity == 1.0  # filled with the object, the cloze is the sentence
    assert cloze_similarity("Insulin lowers [BLANK].", "glucose", "Insulin lowers the blood glucose level.") < 1
    asked = client.generator.requests[0].messages[-1].content
    assert 'object "the blood glucose level"' in asked and "only the object" in asked


def test_a_cloze_that_blanks_the_subject_is_rejected_and_asked_for_again():
    def blanks_the_subject_first(user, request):
        return OBJECT_BLANK if "could not be used" in user else SUBJECT_BLANK

    spec, client = writer(ClozeAnswer=blanks_the_subject_first)
    row = cloze_rows([regenerated()], (spec, client), PROMPTS)[0]
    assert row.status == "kept" and row.record.cloze == "Insulin lowers [BLANK]." and "1 cloze(s) rejected" in row.note
    rejected = row.record.rejected
    assert [(r.text, r.round) for r in rejected] == [("[BLANK] lowers the blood glucose level.", 0)]
    assert "the object 'the blood glucose level' is still in the cloze" in rejected[0].reason
    second = client.generator.requests[-1].messages[-1].content
    assert 'still contains the object "the blood glucose level"' in second and row.record.call.attempts == 2
    # a writer that always blanks the subject: the fact is invalid, with its last output
    row = cloze_rows([regenerated()], writer(ClozeAnswer=lambda user, request: SUBJECT_BLANK), PROMPTS)[0]
    assert row.status == "invalid" and "rejected in 2 round(s)" in row.note and "still in the cloze" in row.note
    assert row.record.call.raw_text == SUBJECT_BLANK and len(row.record.rejected) == 2


def test_cloze_object_check_ignores_case_and_spacing_and_japanese_works():
    assert blank_problem("[BLANK] lowers The  Blood glucose level.", "the blood glucose level") is not None
    assert blank_problem("Insulin lowers [BLANK].", "the blood glucose level") is None
    assert blank_problem("[BLANK]は血糖値を下げる。", "血糖値") is not None
    assert blank_problem("インスリンは[BLANK]を下げる。", "血糖値") is None


def test_cloze_stage_retries_then_records_invalid_output():
    no_blank = cloze_json("Insulin lowers it.")
    rows = cloze_rows([regenerated()], writer(3, ClozeAnswer=lambda user, request: no_blank), PROMPTS)
    assert rows[0].status == "invalid" and rows[0].record.call.attempts == 3
    assert "exactly one [BLANK]" in rows[0].note and rows[0].record.call.raw_text == no_blank
    # a retry that succeeds is kept
    flaky = {"ClozeAnswer": lambda user, request: OBJECT_BLANK if request.seed == 1 else no_blank}
    row = cloze_rows([regenerated()], writer(3, **flaky), PROMPTS)[0]
    assert row.status == "kept" and row.record.call.attempts == 2


def _cloze(answer: str = "the blood glucose level"):
    from crossknow.adaxeval.records import ClozeRecord

    return ClozeRecord(triple_record=regenerated(obj=answer), reasoning="r", cloze="Insulin lowers [BLANK].",
                       answer=answer, cloze_similarity=1.0, call=CALL)


def test_the_paraphrase_is_written_from_the_cloze_in_its_own_call():
    question = json.dumps({"reasoning": "It asks what insulin reduces.", "question": "What does insulin reduce?"})
    spec, client = writer(ParaphraseAnswer=lambda user, request: question)
    row = paraphrase_rows([_cloze()], (spec, client), PROMPTS)[0]
    assert row.status == "kept" and row.record.question == "What does insulin reduce?"
    assert row.record.reasoning == "It asks what insulin reduces."
    assert (row.record.cloze, row.record.answer, row.record.fact.sentence.id) == (
        "Insulin lowers [BLANK].", "the blood glucose level", "d-en#0")
    [request] = client.generator.requests
    asked = request.messages[-1].content
    assert request.json_schema["title"] == "ParaphraseAnswer"
    assert "Cloze: Insulin lowers [BLANK]." in asked and "Answer: the blood glucose level" in asked
    assert "Insulin lowers the blood glucose level." not in asked  # from the cloze, not from the sentence


def test_a_question_that_gives_the_answer_away_is_asked_for_again():
    leaks = json.dumps({"reasoning": "r", "question": "Does insulin lower the Blood Glucose level?"})
    good = json.dumps({"reasoning": "r", "question": "What does insulin reduce?"})
    spec, client = writer(ParaphraseAnswer=lambda user, request: good if "could not be used" in user else leaks)
    row = paraphrase_rows([_cloze()], (spec, client), PROMPTS)[0]
    assert row.status == "kept" and row.record.question == "What does insulin reduce?"
    assert [(r.text, r.reason) for r in row.record.rejected] == [
        # a rejection's reason starts with its code, by which the run's summary counts it
        ("Does insulin lower the Blood Glucose level?",
         "answer_in_question: the question gives the answer away (it contains it)")]
    row = paraphrase_rows([_cloze()], writer(ParaphraseAnswer=lambda user, request: leaks), PROMPTS)[0]
    assert row.status == "invalid" and "gives the answer away" in row.note


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


def _query(lang: str = "en", key: str = "d-en#0"):
    from crossknow.adaxeval.records import ClozeRecord, QueryRecord

    cloze = ClozeRecord(triple_record=regenerated(obj="blood glucose", lang=lang, key=key), reasoning="r",
                        cloze="Insulin lowers [BLANK].", answer="blood glucose", cloze_similarity=0.9, call=CALL)
    return QueryRecord(cloze_record=cloze, reasoning="r", question="What does insulin reduce?", call=CALL)


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
    assert row.status == "invalid" and "rejected in 2 round(s): 2 of 3 distractors" in row.note
    assert row.record.distractors == ["b", "c"] and row.record.call.raw_text.startswith('{"distractors"')
    assert row.record.call.error == row.note
    row = distractor_rows([_query()], writer(), PROMPTS)[0]
    assert row.status == "kept" and len(row.record.distractors) == 3 and row.record.length_ratio > 1
    assert row.record.dropped == [] and row.record.call.attempts == 1


def _item(lang: str = "en", key: str = "d-en#0"):
    from crossknow.adaxeval.records import DistractorRecord

    return DistractorRecord(query=_query(lang, key), distractors=["blood pressure", "heart rate", "body weight"],
                            length_ratio=0.9, answer_longest=False, call=CALL)


def test_quality_filter_keeps_all_good_with_support_2_unless_turned_off():
    poor = writer(CrossLanguageJudgement=lambda u, r: '{"support": 1}')
    partner = lambda pair_id, lang: ("ja", "インスリンは血糖値を低下させる。")  # noqa: E731
    assert quality_rows([_item()], writer(), PROMPTS, partner, True)[0].status == "kept"
    row = quality_rows([_item()], poor, PROMPTS, partner, True)[0]
    assert row.status == "dropped" and "support 1" in row.note
    assert quality_rows([_item()], poor, PROMPTS, partner, False)[0].status == "kept"
    # the options are judged twice (A.6.4): in the cloze and as answers to the question; either Poor drops
    grades = {"cloze": "Good", "paraphrase": "Good", "options_cloze": "Good", "options_question": "Good"}
    for field in ("options_cloze", "options_question"):
        judge = writer(InLanguageJudgement=lambda u, r, f=field: json.dumps(grades | {f: "Poor"}))
        row = quality_rows([_item()], judge, PROMPTS, partner, True)[0]
        assert row.status == "dropped" and getattr(row.record, field) == "Poor"
    asked = judge[1].generator.requests[0].messages[-1].content
    assert "Cloze: Insulin lowers [BLANK]." in asked and "Question: What does insulin reduce?" in asked
    assert '"options_cloze"' in asked and '"options_question"' in asked
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
        QualityRecord(item=_item(lang, f"d-{lang}#0"), cloze="Good", paraphrase="Good", options_cloze="Good",
                      options_question="Good", support=2, in_language_call=CALL, cross_language_call=CALL)
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
