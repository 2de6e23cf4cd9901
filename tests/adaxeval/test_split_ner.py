"""Sentence splitting and the NER filter (heuristic, llm: and spacy: backends)."""

from __future__ import annotations

import json

import pytest

from crossknow.adaxeval.ner import LlmNer, make_ner, ner_rows
from crossknow.adaxeval.ner_heuristic import japanese_entities, latin_entities
from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.records import SentenceRecord
from crossknow.adaxeval.split import split_document
from crossknow.data.corpus import Document
from crossknow.data.sentences import split_sentences
from crossknow.errors import CrossknowError
from crossknow.generation.structured import StructuredClient
from crossknow.models.generator import GenerateResult, Usage

from .fake_llm import FakeLLM


def _sentence(text: str, lang: str = "en", index: int = 0) -> SentenceRecord:
    return SentenceRecord(id=f"d#{index}", doc_id="d", pair_id="p", lang=lang, index=index, text=text)


def test_japanese_sentences_end_at_full_stops_and_keep_quotes_whole():
    text = "インスリンは血糖値を下げる。2型糖尿病の治療に用いられる！「効果は明らかである。」と述べた。"
    assert split_sentences(text, "ja") == [
        "インスリンは血糖値を下げる。", "2型糖尿病の治療に用いられる！", "「効果は明らかである。」と述べた。"
    ]


def test_japanese_hard_wrapped_lines_are_joined_without_a_space():
    expected = ["インスリンは血糖値を下げる。", "次の文である。"]
    assert split_sentences("インスリンは血糖値を\n下げる。次の文である。", "ja") == expected


def test_english_abbreviations_do_not_end_sentences_and_blank_lines_do():
    text = "Insulin lowers glucose, e.g. in T2DM patients. Fig. 1 shows the\nresults (p < 0.05).\n\nA new paragraph"
    assert split_sentences(text, "en") == [
        "Insulin lowers glucose, e.g. in T2DM patients.", "Fig. 1 shows the results (p < 0.05).", "A new paragraph"
    ]


def test_split_document_ids_and_short_pieces():
    doc = Document(id="x-en", lang="en", text="Insulin lowers glucose. 1. Basalt is a rock.", metadata={"pair_id": "x"})
    sentences = split_document(doc)
    assert [(s.id, s.index, s.pair_id, s.text) for s in sentences] == [
        ("x-en#0", 0, "x", "Insulin lowers glucose."), ("x-en#1", 1, "x", "Basalt is a rock."),
    ]


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("インスリンは2型糖尿病患者の血糖値を低下させる。", ["インスリン", "2型糖尿病患者", "血糖値"]),
        ("本研究では、PCR法とRNA-seqで東京大学が解析した。", ["PCR法", "RNA-seq", "東京大学"]),
        ("本研究の目的を述べる。", []),  # 本 + one common noun, and a single common noun
        ("要因の一つである。", []),  # a numeral with a counter is not an entity
    ],
)
def test_japanese_heuristic(sentence, expected):
    assert japanese_entities(sentence) == expected


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("EGFR is highly expressed in non-small cell lung carcinoma.", ["EGFR", "carcinoma"]),
        ("The Adam optimizer combines momentum with RMSProp.", ["Adam", "RMSProp"]),
        ("Cushing's disease is treated with IL-6 inhibitors.", ["Cushing's disease", "IL-6"]),
        ("We measured it in 40 patients.", []),  # an opener, plain words, a bare number
        ("Titanium dioxide decomposes organic pollutants.", ["Titanium dioxide"]),  # 'decomposes' is no term
    ],
)
def test_english_heuristic(sentence, expected):
    assert latin_entities(sentence) == expected


def test_ner_rows_keep_two_or_more_entities():
    backend = make_ner("heuristic", lambda spec: pytest.fail("no client needed"), PromptTable.load())
    rows = ner_rows(backend, [_sentence("EGFR is expressed in carcinoma."), _sentence("We measured it.", index=1)])
    assert [(r.status, r.note) for r in rows] == [("kept", "2 entities"), ("dropped", "0 entities")]
    assert rows[0].record.entities == ["EGFR", "carcinoma"] and rows[0].record.ner == "heuristic"


def test_llm_ner_keeps_only_entities_found_in_the_sentence(tmp_path):
    entities = json.dumps({"entities": ["insulin", "Glucose", "liver"]})
    fake = FakeLLM(answers={"EntityList": lambda user, request: entities})
    backend = LlmNer("m", StructuredClient(fake), PromptTable.load())
    rows = ner_rows(backend, [_sentence("Insulin lowers blood glucose.")])
    assert rows[0].status == "kept" and rows[0].record.entities == ["insulin", "Glucose"]
    assert rows[0].record.ner == "llm:m" and rows[0].record.call.model == "m"


def test_llm_ner_invalid_output_is_recorded_and_transport_failure_left_for_later():
    answers = {"EntityList": lambda user, request: None if "later" in user else "not json"}
    backend = LlmNer("m", StructuredClient(FakeLLM(answers=answers), max_attempts=2), PromptTable.load())
    rows = ner_rows(backend, [_sentence("Broken output here."), _sentence("Try again later.", index=1)])
    assert rows[0].status == "invalid" and "not valid JSON" in rows[0].note
    assert rows[0].record.call.raw_text == "not json" and rows[0].record.call.attempts == 2
    assert rows[1] is None


class BaseModel:
    """A scripted base model (completion form): it continues every prompt by the next of `lines` (the last one
    again when they run out)."""

    name = "base"
    model_id = "base-1"
    prompt_format = "completion"

    def __init__(self, lines: list[str]) -> None:
        self.lines = list(lines)
        self.requests = []

    def generate(self, requests):
        self.requests += list(requests)
        texts = [self.lines.pop(0) if len(self.lines) > 1 else self.lines[0] for _ in requests]
        return [GenerateResult(text=text, backend=self.name, model_id=self.model_id, usage=Usage(9, 3))
                for text in texts]


def test_llm_ner_asks_a_base_model_one_line_of_entities_not_json():
    """A base model is asked by a few-shot completion prompt, not for JSON in a chat template: one line of entities
    separated by semicolons, those not in the sentence dropped, the list distinct by code."""
    base = BaseModel([" insulin; Glucose; liver; insulin"])
    backend = LlmNer("base", StructuredClient(base), PromptTable.load())
    [row] = ner_rows(backend, [_sentence("Insulin lowers  blood glucose.")])
    [request] = base.requests
    assert request.prompt is not None and not request.messages and request.json_schema is None
    assert request.stop == ("\n",)
    assert request.prompt.endswith("Sentence: Insulin lowers blood glucose.\nEntities:")
    assert row.status == "kept" and row.record.entities == ["insulin", "Glucose"]
    assert row.record.ner == "llm:base" and row.record.call.attempts == 1


def test_llm_ner_rejects_a_base_models_shot_echo_and_asks_again():
    japanese = SentenceRecord(id="d-ja#0", doc_id="d-ja", pair_id="p", lang="ja", index=0,
                              text="インスリンは肝臓での糖新生を抑える。")
    shot = PromptTable.load().template("ner_fields", "ja").split("固有表現:")[1].splitlines()[0]
    base = BaseModel([shot, "", " インスリン；糖新生"])
    backend = LlmNer("base", StructuredClient(base, max_attempts=3), PromptTable.load())
    [row] = ner_rows(backend, [japanese])
    assert base.requests[0].prompt.endswith("文: インスリンは肝臓での糖新生を抑える。\n固有表現:")
    assert row.status == "kept" and row.record.entities == ["インスリン", "糖新生"]
    assert row.record.call.attempts == 3


def test_unknown_and_unavailable_backends_fail_clearly():
    with pytest.raises(CrossknowError, match="unknown NER backend 'stanza'"):
        make_ner("stanza", lambda spec: None, PromptTable.load())
    with pytest.raises(CrossknowError, match="spacy"):
        make_ner("spacy:en_ner_bionlp13cg_md", lambda spec: None, PromptTable.load())
