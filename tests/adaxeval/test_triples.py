"""Stage 'triples': the writer regenerates the detector's triple before the cloze (the short paper's section 2.1)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .fake_llm import FakeLLM, default_answer, head, reference_of, sentence_of

MED = "Insulin lowers the blood glucose level."
"""The first sentence of the mini corpus's medical document (key med-en#0)."""
JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
"""Kana or kanji: a sentence of the mini corpus's Japanese documents (its English ones hold none)."""
AGAIN = "does not occur in the sentence"
"""Words of the 'triple_again' note (English), which only a rejected triple brings."""


def rows_of(out: Path, stage: str) -> list[dict]:
    """Every committed row of a stage, its record parsed."""
    import pyarrow.parquet as pq

    rows = []
    for shard in sorted((out / "stages" / stage).glob("*.parquet")):
        for row in pq.read_table(shard).to_pylist():
            rows.append(row | {"record": json.loads(row["record"])})
    return rows


def committed(out: Path, stage: str) -> list[str]:
    manifest = out / "stages" / stage / "manifest.json"
    if not manifest.exists():
        return []
    return [key for shard in json.loads(manifest.read_text())["shards"] for key in shard["keys"]]


def outputs(out: Path) -> dict[str, str]:
    files = sorted((out / "dataset").rglob("*.jsonl")) + [out / "invalid.jsonl"]
    return {str(path.relative_to(out)): path.read_text(encoding="utf-8") for path in files}


def first_word_triple(user: str, request) -> str:
    """A regenerated triple unlike the detector's: the object is the sentence's head (`fake_llm.head`), where
    the fake detector's object is the sentence's end."""
    obj = head(sentence_of(user))
    return json.dumps({"subject": "regenerated subject", "relation": "regenerated relation", "object": obj},
                      ensure_ascii=False)


def test_the_cloze_uses_the_regenerated_triple_not_the_detectors(run_fake, tmp_path):
    summary, fake = run_fake(fake=FakeLLM(answers={"TripleAnswer": first_word_triple}))
    out = tmp_path / "run"
    asked = [r.json_schema["title"] for r in fake.requests]
    assert asked.count("TripleAnswer") == 15 and asked.index("TripleAnswer") < asked.index("ClozeAnswer")
    # the writer was given the sentence and the detector's triple as its reference
    triple_prompts = [r.messages[-1].content for r in fake.requests if r.json_schema["title"] == "TripleAnswer"]
    first = next(p for p in triple_prompts if MED in p)
    assert reference_of(first)["object"] == "glucose level"  # the fake detector's object: the last two words
    # the cloze prompts name the regenerated triple, not the detector's
    cloze_prompts = [r.messages[-1].content for r in fake.requests if r.json_schema["title"] == "ClozeAnswer"]
    med = next(p for p in cloze_prompts if MED in p)
    assert reference_of(med) == {"subject": "regenerated subject", "relation": "regenerated relation",
                                 "object": "Insulin lowers"}
    # each in its sentence's language, naming the relation as that language's template writes it, and only so
    relation = {"en": 'relation "regenerated relation"', "ja": "関係「regenerated relation」"}
    langs = ["ja" if JAPANESE.search(sentence_of(p)) else "en" for p in cloze_prompts]
    assert set(langs) == {"en", "ja"}
    for prompt, lang in zip(cloze_prompts, langs, strict=True):
        assert [name for name, words in relation.items() if words in prompt] == [lang], prompt
    # the quality judge is shown the regenerated triple too
    judged = [r.messages[-1].content for r in fake.requests if r.json_schema["title"] == "InLanguageJudgement"]
    assert all("regenerated relation" in p for p in judged) and len(judged) == 15
    # the saved records hold both triples, side by side
    [row] = [r for r in rows_of(out, "triples") if r["key"] == "med-en#0"]
    assert row["status"] == "kept" and "differs from the detector's" in row["note"]
    assert row["record"]["triple"]["object"] == "Insulin lowers"
    assert row["record"]["fact"]["triple"]["object"] == "glucose level"
    # the items: the answer is the regenerated object; both triples are in the metadata
    items = [json.loads(line) for line in (out / "dataset/en/memorization.jsonl").read_text().splitlines()]
    item = next(i for i in items if i["id"] == "med-en#0")
    assert item["question"] == "[BLANK] the blood glucose level."
    assert item["options"][item["answer_idx"]] == item["metadata"]["correct_answer"] == "Insulin lowers"
    assert item["metadata"]["triple"]["object"] == "Insulin lowers"
    assert item["metadata"]["detector_triple"]["object"] == "glucose level"
    ja = [json.loads(line) for line in (out / "dataset/ja/memorization.jsonl").read_text().splitlines()]
    assert len(ja) == 7 and all(i["metadata"]["correct_answer"] == head(i["metadata"]["sentence"]) for i in ja)
    assert {"TiO2", "BERT", "Adam"} < {i["metadata"]["correct_answer"] for i in ja}
    table = {row.stage: row for row in summary.counts}
    assert table["triples"].counts == {"en": 8, "ja": 7} and table["triples"].invalid == {}


def test_an_invalid_regeneration_is_recorded_with_its_reason_and_makes_no_item(run_fake, tmp_path):
    def answers(user: str, request) -> str:
        sentence = sentence_of(user)
        if sentence == MED:  # an object the sentence does not contain, every round
            return json.dumps({"subject": "insulin", "relation": "lowers", "object": "glucagon"})
        if sentence.startswith("Metformin"):  # a blank element: malformed, every attempt
            return json.dumps({"subject": "Metformin", "relation": " ", "object": "hepatic gluconeogenesis"})
        return default_answer("TripleAnswer", user)

    summary, fake = run_fake(fake=FakeLLM(answers={"TripleAnswer": answers}), max_attempts=2)
    out = tmp_path / "run"
    table = {row.stage: row for row in summary.counts}
    assert table["triples"].counts == {"en": 6, "ja": 7} and table["triples"].invalid == {"en": 2}
    assert table["cloze"].counts == {"en": 6, "ja": 7} and table["quality"].counts == {"en": 6, "ja": 7}
    # the writer was asked again, with a note naming the object, for the rejected triple only
    again = [r.messages[-1].content for r in fake.requests if AGAIN in r.messages[-1].content]
    assert len(again) == 1 and MED in again[0] and '"glucagon"' in again[0]
    rows = {r["key"]: r for r in rows_of(out, "triples")}
    med, metformin = rows["med-en#0"], rows["med-en#1"]
    assert med["status"] == metformin["status"] == "invalid"
    assert "rejected in 2 round(s)" in med["note"] and "'glucagon' does not occur in the sentence" in med["note"]
    rejected = [(r["triple"]["object"], r["round"]) for r in med["record"]["rejected"]]
    assert rejected == [("glucagon", 0), ("glucagon", 1)]
    assert med["record"]["triple"] is None and med["record"]["fact"]["triple"]["object"] == "glucose level"
    assert "must not be blank" in metformin["note"] and metformin["record"]["call"]["attempts"] == 2
    # listed in invalid.jsonl with the reason and the raw output; no cloze, no item
    lines = [json.loads(line) for line in (out / "invalid.jsonl").read_text().splitlines()]
    assert [(line["stage"], line["key"]) for line in lines] == [("triples", "med-en#0"), ("triples", "med-en#1")]
    assert "does not occur in the sentence" in lines[0]["error"] and "glucagon" in lines[0]["raw_text"][0]
    assert "must not be blank" in lines[1]["error"] and '"relation": " "' in lines[1]["raw_text"][0]
    assert "med-en#0" not in committed(out, "cloze") and "med-en#1" not in committed(out, "cloze")
    ids = [json.loads(line)["id"] for line in (out / "dataset/en/memorization.jsonl").read_text().splitlines()]
    assert len(ids) == 6 and "med-en#0" not in ids and "med-en#1" not in ids


class Interrupt(BaseException):
    """Stands in for a kill between two model calls."""


def rejects_once(user: str, request) -> str:
    """The reference triple, except for MED's first round: an object the sentence does not contain."""
    if sentence_of(user) == MED and AGAIN not in user:
        return json.dumps({"subject": "insulin", "relation": "lowers", "object": "glucagon"})
    return default_answer("TripleAnswer", user)


def test_a_run_killed_inside_the_triples_stage_resumes_from_the_cache(run_fake, tmp_path):
    run_fake(out=tmp_path / "reference", cache=str(tmp_path / "reference.sqlite"),
             fake=FakeLLM(answers={"TripleAnswer": rejects_once}), batch_size=4)
    reference = outputs(tmp_path / "reference")
    out, cache = tmp_path / "cut", str(tmp_path / "cut.sqlite")
    dying = FakeLLM(answers={"TripleAnswer": rejects_once})
    real = dying.generate

    def generate(requests):  # killed when the writer is asked again about MED: after its chunk's first round
        if any(AGAIN in r.messages[-1].content for r in requests):
            raise Interrupt
        return real(requests)

    dying.generate = generate
    with pytest.raises(Interrupt):
        run_fake(out=out, fake=dying, cache=cache, batch_size=4)
    answered = [r.messages[-1].content for r in dying.requests if r.json_schema["title"] == "TripleAnswer"]
    before = committed(out, "triples")
    assert any(MED in p for p in answered) and "med-en#0" not in before and not (out / "dataset").exists()
    summary, fake = run_fake(out=out, cache=cache, fake=FakeLLM(answers={"TripleAnswer": rejects_once}), batch_size=4)
    assert outputs(out) == reference
    asked = [r.messages[-1].content for r in fake.requests if r.json_schema["title"] == "TripleAnswer"]
    # every triple the killed run got an answer for comes from the cache; MED's second round is asked now
    assert not set(asked) & set(answered) and sum(AGAIN in p for p in asked) == 1
    after = committed(out, "triples")
    assert after[: len(before)] == before and len(after) == len(set(after)) == 15
    [med] = [r for r in rows_of(out, "triples") if r["key"] == "med-en#0"]
    assert med["status"] == "kept" and [r["round"] for r in med["record"]["rejected"]] == [0]
    assert med["record"]["call"]["attempts"] == 2
    assert summary.cached_calls_this_run == 4  # MED's chunk (batch_size 4): its first round, answered before the kill


def test_the_object_must_occur_in_the_sentence_and_no_element_may_be_blank():
    from pydantic import ValidationError

    from crossknow.adaxeval.records import Triple
    from crossknow.adaxeval.triples import TripleAnswer, object_problem

    def problem(sentence: str, obj: str) -> str | None:
        return object_problem(sentence, Triple(subject="s", relation="r", object=obj))

    assert problem(MED, "The  Blood glucose level.") is None  # case, runs of spaces and a final period ignored
    assert problem(MED, "glucagon") == (
        "object_not_in_sentence: the object 'glucagon' does not occur in the sentence (the cloze blanks it)")
    assert problem(MED, "sulin") is not None and problem(MED, "glucose lev") is not None  # not inside a word
    assert problem(MED, ".") is not None  # nothing left to blank
    assert problem("TiO2のアナターゼ相はルチル相よりも活性が高い。", "TiO2") is None
    japanese = "インスリンは血糖値を低下させる。"
    assert problem(japanese, "血糖値") is None and problem(japanese, "血圧") is not None
    assert list(TripleAnswer.model_json_schema()["properties"]) == ["subject", "relation", "object"]
    with pytest.raises(ValidationError, match="must not be blank"):
        TripleAnswer.model_validate({"subject": "insulin", "relation": "  ", "object": "glucose"})
