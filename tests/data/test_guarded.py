"""The one guarded way into a user's file: bounded size, strict UTF-8, bounded JSON and YAML, every
failure an InputError naming the file, the line where it can be told, and the field where it is known."""

from __future__ import annotations

import json
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crossknow.adaxeval.prompts import PromptTable
from crossknow.data.corpus import read_corpus
from crossknow.data.formats import load_item_set
from crossknow.data.guarded import (
    MAX_DEPTH,
    MAX_INT_DIGITS,
    MAX_TABLE_BYTES,
    first_char,
    iter_text_lines,
    load_json,
    load_yaml,
    parse_json,
    parse_yaml,
    read_head,
    read_text,
)
from crossknow.data.jsonl import iter_json_lines, read_jsonl
from crossknow.data.parquet import read_parquet, write_parquet
from crossknow.data.schemas import MCItem
from crossknow.errors import InputError
from crossknow.generation.pricing import PriceTable

ITEM = {"id": "q1", "lang": "en", "kind": "question", "prompt": "Q?", "options": ["a", "b"], "answer": 0}
DEEP = "[" * 100_000 + "]" * 100_000
HUGE_INT = "9" * 5_000
PAIR = {"question": "Q?", "choices": ["a", "b"], "answer": 0,
        "transquestion": "Q?", "transchoices": ["a", "b"], "transanswer": 0}


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("reader", [read_jsonl, load_item_set, read_corpus])
def test_a_value_nested_100000_deep_is_refused_by_name(tmp_path, reader):
    deep = json.dumps(ITEM).replace('"b"]', f'"b"], "metadata": {DEEP}')
    path = write_lines(tmp_path / "items.jsonl", ["", deep])  # a blank first line: line 2 is still named
    with pytest.raises(InputError, match=f"nested more than {MAX_DEPTH} deep") as info:
        reader(path)
    assert (info.value.path, info.value.line) == (str(path), 2)


@pytest.mark.parametrize("reader", [read_jsonl, load_item_set])
def test_an_integer_of_5000_digits_is_refused_by_name(tmp_path, reader):
    path = write_lines(tmp_path / "items.jsonl", [json.dumps(ITEM)[:-1] + f', "metadata": {{"n": {HUGE_INT}}}}}'])
    with pytest.raises(InputError, match=f"an integer of more than {MAX_INT_DIGITS} digits") as info:
        reader(path)
    assert (info.value.path, info.value.line) == (str(path), 1)


def test_invalid_utf8_after_the_first_8_kb_of_a_json_list_names_the_byte(tmp_path):
    path = tmp_path / "Japanese.json"
    text = json.dumps([PAIR | {"note": "x" * 10_000}, PAIR], indent=1).encode("utf-8")
    bad = text.index(b"transquestion", text.index(b"x" * 10_000) + 10_000)
    assert bad > 8192
    path.write_bytes(text[:bad] + b"\xff" + text[bad + 1 :])
    with pytest.raises(InputError, match=f"byte {bad} .*not UTF-8") as info:
        load_item_set(path)
    assert (info.value.path, info.value.line) == (str(path), text.count(b"\n", 0, bad) + 1)


def test_invalid_utf8_in_json_lines_names_the_line_and_byte(tmp_path):
    good = json.dumps(ITEM).encode()
    path = tmp_path / "items.jsonl"
    path.write_bytes(good + b"\n" + good[:10] + b"\xc3\x28" + good[12:] + b"\n")
    with pytest.raises(InputError, match=f"byte {len(good) + 1 + 10} ") as info:
        read_jsonl(path)
    assert info.value.line == 2


def test_a_lone_surrogate_is_refused_with_its_field(tmp_path):
    path = write_lines(tmp_path / "items.jsonl", [json.dumps(ITEM | {"options": ["a", "\ud800"]})])
    with pytest.raises(InputError, match="lone surrogate") as info:
        read_jsonl(path)
    assert (info.value.line, info.value.field) == (1, "options[1]")
    assert parse_json('"\\ud83d\\ude00"', "x.json") == "\U0001f600"  # a pair is one character


def test_a_parquet_metadata_column_nested_deep_is_refused(tmp_path):
    path = write_parquet(tmp_path / "items.parquet", [MCItem.model_validate(ITEM)])
    table = pq.read_table(path)
    table = table.set_column(table.schema.get_field_index("metadata"), "metadata", pa.array([DEEP]))
    pq.write_table(table, path)
    with pytest.raises(InputError, match="nested more than") as info:
        read_parquet(path)
    assert (info.value.line, info.value.field) == (1, "metadata")


def test_parquet_schema_metadata_that_is_not_utf8_is_refused(tmp_path):
    path = write_parquet(tmp_path / "items.parquet", [MCItem.model_validate(ITEM)])
    table = pq.read_table(path)
    metadata = {key: (b"\xffMCItem" if key == b"crossknow.item_type" else value)
                for key, value in table.schema.metadata.items()}
    pq.write_table(table.replace_schema_metadata(metadata), path)
    with pytest.raises(InputError, match=r"not a crossknow item table: .*found b'\\xffMCItem'"):
        read_parquet(path)


def test_a_price_table_that_is_not_utf8_is_refused(tmp_path):
    path = tmp_path / "prices.yaml"
    path.write_bytes(b"gpt-4.1: {prompt: 1, completion: 4}\nmy-\xe9model: {prompt: 1, completion: 1}\n")
    with pytest.raises(InputError, match="byte 39 .*not UTF-8") as info:
        PriceTable.load(path)
    assert info.value.line == 2


def test_a_prompt_file_that_is_not_utf8_is_refused(tmp_path):
    (tmp_path / "xx.yaml").write_bytes(b"language: xx\nnames: {xx: \xff}\n")
    with pytest.raises(InputError, match="byte 25 .*not UTF-8") as info:
        PromptTable.load(tmp_path)
    assert info.value.line == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [(f"names: {DEEP}", f"nested more than {MAX_DEPTH} deep"), (f"n: {HUGE_INT}", "an integer of more than")],
    ids=["deep", "huge-integer"],
)
def test_yaml_tables_refuse_deep_nesting_and_huge_integers_by_name(tmp_path, text, message):
    (tmp_path / "xx.yaml").write_text("language: xx\n" + text + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=message) as info:
        PromptTable.load(tmp_path)
    assert info.value.line == 2
    (tmp_path / "prices.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        PriceTable.load(tmp_path / "prices.yaml")


def test_a_50_mb_single_line_yaml_is_refused_in_under_a_second(tmp_path):
    (tmp_path / "xx.yaml").write_bytes(b"language: [" + b"a, " * (50_000_000 // 3) + b"\n")
    price_file = tmp_path / "prices.yaml"
    price_file.write_bytes((tmp_path / "xx.yaml").read_bytes())
    for load, path in ((PromptTable.load, tmp_path), (PriceTable.load, price_file)):
        started = time.perf_counter()
        with pytest.raises(InputError, match=f"larger than {MAX_TABLE_BYTES:,} bytes"):
            load(path)
        assert time.perf_counter() - started < 1.0


def test_read_text_and_iter_text_lines_bound_the_size(tmp_path):
    path = write_lines(tmp_path / "a.txt", ["short", "x" * 100, "short"])
    assert read_text(path, max_bytes=200).startswith("short\n")
    with pytest.raises(InputError, match="larger than 50 bytes"):
        read_text(path, max_bytes=50)
    lines = iter_text_lines(path, max_line_bytes=50)
    assert next(lines) == (1, "short\n")
    with pytest.raises(InputError, match="longer than 50 bytes") as info:
        next(lines)
    assert info.value.line == 2
    assert [line for _, line in iter_text_lines(path, max_line_bytes=100)][1] == "x" * 100 + "\n"


def test_parse_errors_name_the_line():
    with pytest.raises(InputError, match="invalid JSON") as info:
        parse_json('[1,\n2,\n}', "a.json")
    assert (info.value.path, info.value.line) == ("a.json", 3)
    with pytest.raises(InputError, match="not valid YAML") as info:
        parse_yaml("a: 1\nb: [\n", "a.yaml")
    assert info.value.path == "a.yaml" and info.value.line == 3
    assert parse_json('{"a": "[[[[", "b": [[1]]}', "a.json") == {"a": "[[[[", "b": [[1]]}
    assert parse_json("[" * MAX_DEPTH + "]" * MAX_DEPTH, "a.json") is not None


BOM = b"\xef\xbb\xbf"


def test_a_byte_order_mark_is_dropped_at_the_start_of_a_file_and_nowhere_else(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(BOM + "a\n\ufeffb\n".encode())
    assert read_text(path) == "a\n\ufeffb\n"
    assert list(iter_text_lines(path)) == [(1, "a\n"), (2, "\ufeffb\n")]
    assert read_head(path, 2) == b"a\n"
    path.write_bytes(BOM + b'  [{"a": 1}]')
    assert first_char(path) == "[" and load_json(path) == [{"a": 1}]
    path.write_bytes(BOM + b"a: 1\n")
    assert load_yaml(path) == {"a": 1}


@pytest.mark.parametrize("read", [read_text, lambda path: list(iter_text_lines(path))], ids=["whole", "by-line"])
def test_a_byte_after_a_byte_order_mark_is_named_by_its_offset_in_the_file(tmp_path, read):
    path = tmp_path / "a.txt"
    path.write_bytes(BOM + b"ok\n\xff\n")
    with pytest.raises(InputError, match=r"byte 6 \(0xff\)") as info:
        read(path)
    assert info.value.line == 2


def test_a_line_after_a_byte_order_mark_is_held_to_the_same_length(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(BOM + b"x" * 50 + b"\n" + b"y" * 51 + b"\n")
    lines = iter_text_lines(path, max_line_bytes=50)
    assert next(lines) == (1, "x" * 50 + "\n")
    with pytest.raises(InputError, match="longer than 50 bytes") as info:
        next(lines)
    assert info.value.line == 2


READERS = {
    "read_text": read_text,
    "iter_text_lines": lambda path: list(iter_text_lines(path)),
    "first_char": first_char,
    "load_json": load_json,
    "load_yaml": load_yaml,
    "items": load_item_set,
    "corpus": read_corpus,
    "prices": PriceTable.load,
}


@pytest.mark.parametrize("data", [b"", b"\n \t\r\n", BOM, BOM + b" \n"],
                         ids=["empty", "white-space", "bom", "bom-space"])
@pytest.mark.parametrize("reader", READERS.values(), ids=list(READERS))
def test_a_file_of_nothing_but_white_space_is_refused_by_name(tmp_path, reader, data):
    path = tmp_path / "input.jsonl"
    path.write_bytes(data)
    with pytest.raises(InputError, match="the file is empty") as info:
        reader(path)
    assert info.value.path == str(path)


def test_an_append_only_log_may_be_empty(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"")
    assert list(iter_text_lines(path, allow_empty=True)) == []
    assert list(iter_json_lines(path, allow_empty=True)) == []
