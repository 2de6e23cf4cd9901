import json
from pathlib import Path

import pytest

from crossknow.data.eclektic import LANGUAGES
from crossknow.data.parquet import write_parquet
from crossknow.data.schemas import QAItem
from crossknow.eclektic.examples import load_eclektic_set
from crossknow.errors import InputError

DEMO_ITEMS = Path(__file__).parents[2] / "src/crossknow/samples/demo/items.jsonl"


def wide_row(q_id, source, langs=LANGUAGES, **changes):
    """A row in the released schema, with question, answer and context filled for `langs`."""
    record = {"q_id": q_id, "original_lang": source, "title": f"title {q_id}", "url": "https://x",
              "content": f"content {q_id}", "question": "q", "answer": "a"}
    for lang in langs:
        record |= {f"{lang}_q": f"q{q_id} {lang}", f"{lang}_a": f"a{q_id} {lang}", f"{lang}_c": f"c{q_id} {lang}"}
    return record | changes


def write(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def test_main_variant_evaluates_every_language_and_reports_a_missing_column(tmp_path):
    no_fr = [lang for lang in LANGUAGES if lang != "fr"]
    path = write(tmp_path / "eclektic_main.jsonl", [wide_row(1, "ja"), wide_row(2, "de", no_fr)])
    ecl = load_eclektic_set(path)
    assert (ecl.name, ecl.variant) == ("eclektic_main", "main")
    # q1: the source first, then the other 11 in column order; q2 lacks fr (reported, not filled in).
    assert ecl.targets["1"] == ("ja", *(lang for lang in LANGUAGES if lang != "ja"))
    assert ecl.targets["2"] == ("de", *(lang for lang in no_fr if lang != "de"))
    assert len(ecl.examples()) == 12 + 11
    assert ecl.examples()[0] == ("1", "ja", "ja") and ("2", "de", "en") in ecl.examples()
    assert [(r.line, r.field) for r in ecl.invalid] == [(2, "fr_q")]
    assert "not filled in" in ecl.invalid[0].reason
    row = ecl.question("1", "ko")
    assert (row.question, row.answer, row.context, row.source_lang) == ("q1 ko", "a1 ko", "c1 ko", "ja")
    assert (row.title, row.source_context) == ("title 1", "c1 ja")
    with pytest.raises(KeyError, match="'2' in 'fr'"):
        ecl.question("2", "fr")


def test_popular_variant_reads_the_filled_columns_as_the_listed_languages(tmp_path):
    rows = [
        wide_row(1, "ja", ("ja", "de", "en")),
        wide_row(2, "hi", ("hi", "ko")),
        wide_row(3, "it", ("de", "en")),  # the source's own columns are empty: cannot be scored
    ]
    ecl = load_eclektic_set(write(tmp_path / "popular.jsonl", rows), variant="popular")
    assert ecl.targets == {"1": ("ja", "de", "en"), "2": ("hi", "ko")}
    # 3 + 2 examples, source rows included (as the paper's 6,628 count does, crossknow's reading).
    assert len(ecl.examples()) == 5
    assert [(r.line, r.field) for r in ecl.invalid] == [(3, "it_q")]
    assert "source language 'it'" in ecl.invalid[0].reason


@pytest.mark.parametrize(
    ("bad", "field"),
    [(wide_row(2, "de", en_q=["a list"]), "en_q"), (wide_row(2, "de", original_lang=None), "original_lang")],
)
def test_a_wide_row_of_the_wrong_shape_names_line_and_field(tmp_path, bad, field):
    path = write(tmp_path / "e.jsonl", [wide_row(1, "de"), bad])
    with pytest.raises(InputError) as info:
        load_eclektic_set(path)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), 2, field)


def qa(pair, lang, source="en", **changes):
    item = {"id": f"{pair}:{lang}", "lang": lang, "question": f"Q {pair} {lang}", "answer": f"A {pair} {lang}",
            "context": f"C {pair} {lang}", "source_lang": source, "pair_id": pair, "metadata": {"title": f"T {pair}"}}
    return item | changes


def test_crossknow_qa_file_main_and_popular(tmp_path):
    path = write(tmp_path / "qa.jsonl", [qa("p1", "ja"), qa("p1", "en"), qa("p1", "de"), qa("p2", "en"),
                                         qa("p2", "ja"), qa("p3", "ja")])
    main = load_eclektic_set(path)
    # The set's languages are those in the file (de, en, ja); p2 lacks de; p3 lacks its source (en).
    assert main.targets == {"p1": ("en", "de", "ja"), "p2": ("en", "ja")}
    assert [(r.line, r.field, r.item_id) for r in main.invalid] == [(4, "lang", "p2"), (6, "source_lang", "p3")]
    assert "'de'" in main.invalid[0].reason
    popular = load_eclektic_set(path, variant="popular")
    assert popular.targets == main.targets and [r.item_id for r in popular.invalid] == ["p3"]
    row = popular.question("p1", "de")
    assert (row.answer, row.context, row.title, row.source_context) == ("A p1 de", "C p1 de", "T p1", "C p1 en")
    assert [q_id for q_id, _, _ in load_eclektic_set(path, limit=1).examples()] == ["p1"] * 3


def test_crossknow_parquet_qa_file(tmp_path):
    items = [QAItem.model_validate(qa("p1", lang)) for lang in ("en", "ja")]
    ecl = load_eclektic_set(write_parquet(tmp_path / "qa.parquet", items))
    assert ecl.examples() == [("p1", "en", "en"), ("p1", "en", "ja")]


@pytest.mark.parametrize(
    ("records", "line", "field"),
    [
        ([qa("p1", "en"), qa("p1", "ja", source_lang=None)], 2, "source_lang"),
        ([qa("p1", "en"), qa("p1", "ja", pair_id=None)], 2, "pair_id"),
        ([qa("p1", "en"), qa("p1", "ja", source="ja")], 2, "source_lang"),
        ([qa("p1", "en"), qa("p1", "en", id="other")], 2, "lang"),
        ([qa("p1", "en"), qa("p1", "ja", answer=7)], 2, "answer"),
    ],
)
def test_a_crossknow_record_of_the_wrong_shape_names_line_and_field(tmp_path, records, line, field):
    path = write(tmp_path / "qa.jsonl", records)
    with pytest.raises(InputError) as info:
        load_eclektic_set(path)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), line, field)


def test_question_items_in_two_languages_with_a_pair_id(tmp_path):
    """The demo's items.jsonl: facts trained in English, asked in English and Japanese."""
    ecl = load_eclektic_set(DEMO_ITEMS)
    lines = [json.loads(line) for line in DEMO_ITEMS.read_text(encoding="utf-8").splitlines()]
    questions = [r for r in lines if r["kind"] == "question"]
    assert len(ecl.targets) == len({r["pair_id"] for r in questions}) == 40
    assert set(ecl.targets.values()) == {("en", "ja")}
    first_ja = next(r for r in questions if r["lang"] == "ja")
    row = ecl.question(first_ja["pair_id"], "ja")
    assert (row.question, row.answer) == (first_ja["prompt"], first_ja["options"][first_ja["answer"]])
    assert (row.source_lang, row.context) == ("en", None)
    clozes = [line_no for line_no, r in enumerate(lines, start=1) if r["kind"] == "cloze"]
    assert [(r.line, r.field) for r in ecl.invalid] == [(line_no, "kind") for line_no in clozes]


def test_an_adaxeval_interlingual_pairing_is_refused_with_the_reason(tmp_path):
    link = {"item_id": "s1", "lang": "en", "doc_id": "d1", "pair_id": "p1", "partner_lang": "ja",
            "partner_doc_id": "d2", "support": 2}
    path = write(tmp_path / "interlingual.jsonl", [link])
    with pytest.raises(InputError, match="document in the partner language") as info:
        load_eclektic_set(path)
    assert info.value.line == 1
