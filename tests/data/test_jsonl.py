import json
import os

import pytest

from crossknow.data.jsonl import read_jsonl, write_jsonl
from crossknow.data.schemas import MCItem, QAItem
from crossknow.errors import InputError
from crossknow.store.atomic import atomic_write as write_atomic

MC = MCItem(
    id="q1",
    lang="ja",
    kind="cloze",
    prompt="富士山は[BLANK]にある。",
    options=["静岡県と山梨県", "長野県"],
    answer=0,
    source_lang="ja",
    pair_id="p1",
    metadata={"docid": 3, "triple": ["a", "b", "c"], "score": 0.125},
)
QA = QAItem(
    id="7:en",
    lang="en",
    question="Who?",
    answer="Someone",
    context=None,
    pair_id="7",
    metadata={"url": "u"},
)


def mc_record(**changes):
    record = MC.model_dump(mode="json")
    record.update(changes)
    return record


def write_lines(path, records):
    path.write_text(
        "".join(
            (r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in records
        )
    )
    return path


def test_round_trip_keeps_every_field(tmp_path):
    path = write_jsonl(tmp_path / "items.jsonl", [MC, QA])
    item_set = read_jsonl(path)
    assert item_set.items == [MC, QA]
    assert isinstance(item_set.items[1], QAItem)
    assert item_set.name == "items" and item_set.format == "jsonl" and item_set.invalid == []
    assert "富士山" in path.read_text(encoding="utf-8")  # not \u-escaped


def test_blank_lines_are_skipped_and_limit_keeps_first(tmp_path):
    other = mc_record(id="q2")
    path = write_lines(tmp_path / "a.jsonl", [mc_record(), "", "   ", other])
    assert [item.id for item in read_jsonl(path).items] == ["q1", "q2"]
    assert [item.id for item in read_jsonl(path, limit=1).items] == ["q1"]


@pytest.mark.parametrize(
    ("bad", "field", "words"),
    [
        (mc_record(options=["a", 3]), "options[1]", "string"),
        (mc_record(answer=2), "answer", "out of range"),
        (mc_record(options=["a", " "]), "options", "empty"),
        (mc_record(prompt="no blank here"), "prompt", "[BLANK]"),
        (mc_record(kind="essay"), "kind", "cloze"),
        (mc_record(extra=1), "extra", "Extra inputs"),
        ({k: v for k, v in mc_record().items() if k != "lang"}, "lang", "required"),
        ({"id": "x", "lang": "en", "question": "Q?"}, "answer", "required"),
    ],
)
def test_invalid_record_names_path_line_and_field(tmp_path, bad, field, words):
    path = write_lines(tmp_path / "bad.jsonl", [mc_record(id="ok"), bad])
    with pytest.raises(InputError) as info:
        read_jsonl(path)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), 2, field)
    message = str(info.value)
    assert (
        str(path) in message
        and "line 2" in message
        and f"'{field}'" in message
        and words in message
    )


def test_invalid_json_names_the_line(tmp_path):
    path = write_lines(tmp_path / "bad.jsonl", [mc_record(), '{"id": "x", ', mc_record(id="z")])
    with pytest.raises(InputError, match=r"line 2: invalid JSON") as info:
        read_jsonl(path)
    assert info.value.line == 2


def test_a_line_that_is_not_an_object_is_an_error(tmp_path):
    path = write_lines(tmp_path / "bad.jsonl", ["[1, 2]"])
    with pytest.raises(InputError, match="line 1: expected a JSON object, found list"):
        read_jsonl(path)


def test_duplicate_id_names_the_second_line(tmp_path):
    path = write_lines(tmp_path / "dup.jsonl", [mc_record(), mc_record(id="q2"), mc_record()])
    with pytest.raises(InputError) as info:
        read_jsonl(path)
    assert (info.value.line, info.value.field) == (3, "id")
    assert "first used on line 1" in str(info.value)


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        read_jsonl(tmp_path / "nope.jsonl")


def test_atomic_write_leaves_old_file_and_no_temp_on_failure(tmp_path):
    path = write_jsonl(tmp_path / "items.jsonl", [MC])
    before = path.read_bytes()

    def fail(handle):
        handle.write("half a line")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_atomic(path, fail)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["items.jsonl"]


def test_write_creates_parent_directories(tmp_path):
    path = write_jsonl(tmp_path / "a" / "b" / "items.jsonl", [QA])
    assert read_jsonl(path).items == [QA]
