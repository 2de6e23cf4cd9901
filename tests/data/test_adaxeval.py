import json

import pytest

from crossknow.data.adaxeval import detect_lang, read_adaxeval, source_documents
from crossknow.errors import InputError

from ..conftest import SHARED_DATA as SHARED

needs_shared = pytest.mark.skipif(not SHARED.exists(), reason=f"{SHARED} is not present")
EXAMPLES = SHARED / "adaxeval-paper-examples.jsonl"


def release(
    id_=1,
    question="Water boils at [BLANK] degrees.",
    options=("100", "50"),
    answer_idx=0,
    **metadata,
):
    meta = {
        "docid": 7,
        "sentid": 2,
        "correct_answer": options[answer_idx] if answer_idx < len(options) else "x",
        "triple": ["water", "boils at", "100"],
        "sentence": "Water boils at 100 degrees.",
    }
    meta.update(metadata)
    return {
        "id": id_,
        "question": question,
        "options": list(options),
        "answer_idx": answer_idx,
        "metadata": meta,
    }


def example(
    cloze="A [BLANK] b.", paraphrase="What is a?", options=("x", "y"), answer_idx=1, lang="en"
):
    return {
        "lang": lang,
        "sentence": "A y b.",
        "cloze": cloze,
        "paraphrase": paraphrase,
        "options": list(options),
        "answer_idx": answer_idx,
    }


def write(path, records):
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )
    return path


@needs_shared
def test_paper_examples_give_a_cloze_and_a_question_item_per_line():
    item_set = read_adaxeval(EXAMPLES)
    # Every one of the 20 lines is usable: one [BLANK] in each cloze, answer_idx within the 4 options.
    assert item_set.invalid == []
    assert len(item_set.items) == 40
    assert [item.id for item in item_set.items[:4]] == [
        "cloze:1",
        "question:1",
        "cloze:2",
        "question:2",
    ]
    by_id = {item.id: item for item in item_set.items}
    assert sum(item.lang == "ja" for item in item_set.items) == 20
    assert by_id["cloze:2"].prompt == "胆道癌は [BLANK] などに分類される。"
    assert by_id["question:2"].prompt == "胆道癌はどのような種類に分類されますか？"
    assert by_id["cloze:12"].lang == "en" and by_id["cloze:12"].answer == 0
    assert by_id["question:17"].options[by_id["question:17"].answer] == "appressorium"
    for item in item_set.items:
        assert item.pair_id is None
        assert item.metadata["example"] == int(item.id.split(":")[1])
        assert item.kind == item.id.split(":")[0]
        assert "lang_detected" not in item.metadata


def test_release_ids_are_made_unique_and_metadata_kept(tmp_path):
    path = write(
        tmp_path / "en.jsonl",
        [
            release(id_=1),
            release(id_=1, question="At what temperature does water boil?"),
        ],
    )
    item_set = read_adaxeval(path)
    cloze, question = item_set.items
    assert (cloze.id, cloze.kind, question.id, question.kind) == (
        "cloze:1",
        "cloze",
        "question:1",
        "question",
    )
    assert cloze.metadata["source_id"] == 1 and cloze.metadata["docid"] == 7
    assert cloze.metadata["triple"] == ["water", "boils at", "100"]
    assert cloze.lang == "en" and cloze.metadata["lang_detected"] is True


def test_release_language_detection_and_explicit_lang(tmp_path):
    path = write(
        tmp_path / "mixed.jsonl",
        [
            release(id_="a", question="水は[BLANK]度で沸騰する。"),
            release(id_="b", question="Which is a kana word?", options=("カタカナ", "latin")),
            release(id_="c"),
        ],
    )
    assert [item.lang for item in read_adaxeval(path).items] == ["ja", "ja", "en"]
    explicit = read_adaxeval(path, lang="ja").items
    assert [item.lang for item in explicit] == ["ja", "ja", "ja"]
    assert all("lang_detected" not in item.metadata for item in explicit)


def test_detect_lang():
    assert detect_lang("ひらがな") == detect_lang("カタカナ") == detect_lang("漢字") == "ja"
    assert detect_lang("plain ASCII", "Ünïcödé") == "en"


@pytest.mark.parametrize(
    ("record", "field", "words"),
    [
        (release(correct_answer="50"), "metadata.correct_answer", "is not the keyed option 0"),
        (release(answer_idx=2), "answer_idx", "out of range"),
        (release(options=("only",)), "options", "at least 2"),
        (release(options=("100", "")), "options", "option 1 is empty"),
        (release(question="[BLANK] boils at [BLANK]."), "question", "found 2"),
        (release(question="  "), "question", "empty"),
    ],
)
def test_unscorable_release_records_are_reported_not_raised(tmp_path, record, field, words):
    path = write(tmp_path / "r.jsonl", [release(id_=0), record, release(id_=2)])
    item_set = read_adaxeval(path)
    assert [item.id for item in item_set.items] == ["cloze:0", "cloze:2"]
    (bad,) = item_set.invalid
    assert (bad.path, bad.line, bad.field) == (str(path), 2, field)
    assert words in bad.reason


def test_duplicate_release_id_is_reported(tmp_path):
    path = write(tmp_path / "r.jsonl", [release(id_=5), release(id_=6), release(id_=5)])
    item_set = read_adaxeval(path)
    assert len(item_set.items) == 2
    assert item_set.invalid[0].line == 3 and "first used on line 1" in item_set.invalid[0].reason


@pytest.mark.parametrize(
    ("record", "field", "words"),
    [
        ({k: v for k, v in release().items() if k != "question"}, "question", "missing"),
        ({**release(), "answer_idx": "0"}, "answer_idx", "expected an integer, found a string"),
        ({**release(), "answer_idx": True}, "answer_idx", "found a boolean"),
        ({**release(), "options": "100, 50"}, "options", "expected a list"),
        ({**release(), "options": ["100", 50]}, "options[1]", "expected a string"),
        ({**release(), "metadata": []}, "metadata", "expected an object"),
    ],
)
def test_malformed_release_records_raise_with_path_line_field(tmp_path, record, field, words):
    path = write(tmp_path / "r.jsonl", [release(id_=0), release(id_=1), record])
    with pytest.raises(InputError) as info:
        read_adaxeval(path)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), 3, field)
    assert words in str(info.value) and f"line 3: field '{field}'" in str(info.value)


def test_examples_variant_flaws_become_invalid_records(tmp_path):
    path = write(
        tmp_path / "ex.jsonl",
        [
            example(),
            example(cloze="No blank at all."),
            example(cloze="[BLANK] and [BLANK]."),
            example(answer_idx=4),
            example(options=("x", "")),
            example(paraphrase=" "),
        ],
    )
    item_set = read_adaxeval(path)
    # Line 1 gives two items; lines 2-3 keep their question item, lines 4-5 give nothing (one
    # record each: the flaw is shared), line 6 keeps its cloze item.
    assert [item.id for item in item_set.items] == [
        "cloze:1",
        "question:1",
        "question:2",
        "question:3",
        "cloze:6",
    ]
    assert [(r.line, r.field) for r in item_set.invalid] == [
        (2, "cloze"),
        (3, "cloze"),
        (4, "answer_idx"),
        (5, "options"),
        (6, "paraphrase"),
    ]
    assert "found 0" in item_set.invalid[0].reason and "found 2" in item_set.invalid[1].reason


def test_examples_variant_malformed_line_and_lang_conflict(tmp_path):
    path = write(
        tmp_path / "ex.jsonl",
        [example(), {k: v for k, v in example().items() if k != "paraphrase"}],
    )
    with pytest.raises(InputError) as info:
        read_adaxeval(path)
    assert (info.value.line, info.value.field) == (2, "paraphrase")
    with pytest.raises(InputError, match="line 1: field 'lang'"):
        read_adaxeval(write(tmp_path / "ex2.jsonl", [example()]), lang="ja")


def test_limit_keeps_first_usable_items(tmp_path):
    path = write(tmp_path / "ex.jsonl", [example(answer_idx=9), example(), example()])
    item_set = read_adaxeval(path, limit=3)
    assert [item.id for item in item_set.items] == ["cloze:2", "question:2", "cloze:3"]
    assert len(item_set.invalid) == 1


def test_source_documents_are_every_lines_docid_unscorable_items_included(tmp_path):
    """Line 2 cannot be scored (answer out of range) but was still generated from document 8."""
    path = write(tmp_path / "set.jsonl", [release(1, docid="d-7"), release(2, answer_idx=5, docid=8),
                                          release(3, docid="d-7")])
    assert len(read_adaxeval(path).items) == 2
    assert source_documents(path) == {"d-7": 1, "8": 2}


@pytest.mark.parametrize("metadata", [{"docid": None}, {"docid": ""}, "no metadata"])
def test_an_item_naming_no_source_document_is_an_input_error(tmp_path, metadata):
    bad = release(2)
    if metadata == "no metadata":
        del bad["metadata"]
    else:
        bad["metadata"].update(metadata)
    path = write(tmp_path / "set.jsonl", [release(1), bad])
    with pytest.raises(InputError, match="names no source document") as info:
        source_documents(path)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), 2, "metadata.docid")
    with pytest.raises(InputError, match="line 1: field 'metadata.docid': expected a string or an integer"):
        source_documents(write(tmp_path / "list.jsonl", [release(1, docid=["a"])]))


@needs_shared
def test_the_paper_examples_name_no_source_document():
    """The paper-examples file carries each item's sentence but no document id: it cannot exclude anything."""
    with pytest.raises(InputError) as info:
        source_documents(EXAMPLES)
    assert (info.value.line, info.value.field) == (1, "metadata.docid")
