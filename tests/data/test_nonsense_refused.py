"""Nonsense that no reader may accept without a word: each case is refused by name (file, line, field), so the
user can find and fix it, and the same way by every reader of one record."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crossknow.adaxeval.annotate import score_columns, score_sheet
from crossknow.data.adaxeval import read_adaxeval
from crossknow.data.corpus import read_corpus
from crossknow.data.formats import load_item_set
from crossknow.data.guarded import parse_json
from crossknow.data.jsonl import iter_json_lines, read_jsonl
from crossknow.data.pairing import read_pairing
from crossknow.data.parquet import items_table, read_parquet
from crossknow.data.pitfalls import read_pitfalls
from crossknow.data.schemas import MCItem
from crossknow.data.sequence_variants import read_variants
from crossknow.dynamics.checkpoints import discover_checkpoints
from crossknow.errors import CrossknowError, InputError
from crossknow.generation.pricing import PriceTable
from crossknow.pitfalls.categories import candidate_pairs
from crossknow.pitfalls.flaws import read_pair_file
from crossknow.pitfalls.probe.sources import read_source_file, read_source_sample
from crossknow.training.templates import TemplateTable

ITEM = {"id": "q1", "lang": "en", "kind": "question", "prompt": "Q?", "options": ["a", "b", "c", "d"], "answer": 1}
DOCUMENT = {"id": "d1", "lang": "en", "text": "A document."}
LINK = {"item_id": "q1", "lang": "en", "doc_id": "d1", "pair_id": "p1", "partner_lang": "ja",
        "partner_doc_id": "d1-ja", "support": 2}
VARIANT = {"id": "s1:original", "source_id": "s1", "lang": "en", "method": "original", "level": "none", "x": None,
           "y": None, "a": None, "text": "A sequence.", "token_ids": None, "tokenizer": "default",
           "edit_distance": 0, "seed": 0}
SIDE = {"question": "Q?", "choices": ["a", "b", "c", "d"], "answer": 1, "lang": "en"}
CANDIDATE = {"id": "p1", "source_id": "s:1", "recipe": "paper", "english": SIDE, "target": SIDE | {"lang": "ja"},
             "value": 0.5, "beta_en": {}, "beta_target": {}, "depth": 0, "parent_id": None, "lineage": []}
PAIR = {"question": "Q?", "choices": ["a", "b"], "answer": "a", "transquestion": "Q?", "transchoices": ["x", "y"],
        "transanswer": "x", "oriquestion": "Q?"}


def lines(path: Path, *records: dict) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def refused(call, path: Path, line: int | None, field: str | None, match: str | None = None) -> InputError:
    with pytest.raises(InputError, match=match) as info:
        call()
    assert (info.value.path, info.value.line, info.value.field) == (str(path), line, field)
    return info.value


# ---- language fields are language tags everywhere ---------------------------------------------------------------


@pytest.mark.parametrize("lang", ["x" * 100_000, "english", " "])
def test_a_corpus_language_that_is_no_tag_is_refused(tmp_path, lang):
    path = lines(tmp_path / "corpus.jsonl", DOCUMENT, DOCUMENT | {"id": "d2", "lang": lang})
    refused(lambda: read_corpus(path), path, 2, "lang", "is not a language tag")


@pytest.mark.parametrize("lang", ["english", " "])
def test_a_variant_language_that_is_no_tag_is_refused(tmp_path, lang):
    path = lines(tmp_path / "variants.jsonl", VARIANT | {"lang": lang})
    refused(lambda: list(read_variants(iter_json_lines(path), path)), path, 1, "lang", "is not a language tag")


# ---- pairing files ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("support", [-1, 10**30, "2", True, 2.0])
def test_a_support_that_is_no_judgement_is_refused(tmp_path, support):
    path = lines(tmp_path / "interlingual.jsonl", LINK | {"support": support})
    refused(lambda: read_pairing(path), path, 1, "support")


def test_a_link_to_its_own_language_is_refused(tmp_path):
    path = lines(tmp_path / "interlingual.jsonl", LINK | {"partner_lang": "en"})
    refused(lambda: read_pairing(path), path, 1, "partner_lang", "the item's own language")


# ---- Pitfalls category files (a probe's candidates.jsonl) -------------------------------------------------------


@pytest.mark.parametrize(("side", "match"), [
    ({"answer": 99}, "answer index 99 is out of range for 4 choices"),
    ({"choices": ["a", "", "c", "d"]}, "choice 1 is empty"),
    ({"choices": ["a", "b", "a", "d"]}, "choice 2 .* repeats choice 0"),
    ({"choices": []}, "at least 2"),
    ({"answer": True}, "valid integer"),
    ({"lang": "english"}, "is not a language tag"),
])
def test_a_candidate_question_that_cannot_be_asked_is_refused(tmp_path, side, match):
    path = lines(tmp_path / "candidates.jsonl", CANDIDATE | {"english": SIDE | side})
    error = refused(lambda: candidate_pairs(path, None), path, 1, error_field(side), match)
    assert error.field.startswith("english")


def error_field(side: dict) -> str:
    name = next(iter(side))
    return f"english.{name}" if name in ("answer", "lang") or not side[name] else "english.choices"


# ---- prices -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("suffix", "text", "line", "field", "message"), [
    (".yaml", "m: {prompt: .inf, completion: 1}", None, "m", "prompt: Input should be a finite number"),
    (".yaml", "m: {prompt: .nan, completion: 1}", None, "m", "prompt: Input should be a finite number"),
    (".yaml", "m: {prompt: true, completion: 1}", None, "m", "prompt: Input should be a valid number"),
    (".yaml", "m: {prompt: '2', completion: 1}", None, "m", "prompt: Input should be a valid number"),
    (".json", '{"m": {"prompt": Infinity, "completion": 1}}', 1, "m.prompt", "Infinity is no JSON number"),
    (".json", '{"m": {"prompt": NaN, "completion": 1}}', 1, "m.prompt", "NaN is no JSON number"),
    (".json", '{"m": {"prompt": true, "completion": 1}}', None, "m", "prompt: Input should be a valid number"),
])
def test_a_price_that_is_no_finite_number_is_refused(tmp_path, suffix, text, line, field, message):
    """JSON's non-finite literals are refused by the JSON reader itself, at the value's path and line; every other
    bad price parses and is refused by the price record's validation, which names the model entry."""
    path = tmp_path / f"prices{suffix}"
    path.write_text(text, encoding="utf-8")
    refused(lambda: PriceTable.load(path), path, line, field, message)


def test_json_nan_and_infinity_are_refused_with_their_field(tmp_path):
    with pytest.raises(InputError, match="NaN is no JSON number") as info:
        parse_json('{"a": [1, {"b": NaN}]}', tmp_path / "x.json", line=3)
    assert (info.value.line, info.value.field) == (3, "a[1].b")
    path = lines(tmp_path / "items.jsonl", ITEM, ITEM | {"id": "q2", "metadata": {"score": -1}})
    path.write_text(path.read_text().replace("-1", "-Infinity"), encoding="utf-8")
    refused(lambda: read_jsonl(path), path, 2, "metadata.score", "-Infinity is no JSON number")


# ---- strict integers, distinct options, unique ids: JSON lines and Parquet agree --------------------------------


def parquet_with(path: Path, column: str, values: list, kind: pa.DataType) -> Path:
    table = items_table([MCItem(**ITEM), MCItem(**ITEM | {"id": "q2"})])
    table = table.set_column(table.schema.get_field_index(column), column, pa.array(values, kind))
    pq.write_table(table, path)
    return path


@pytest.mark.parametrize(("answer", "kind"), [("1", pa.string()), (1.0, pa.float64()), (True, pa.bool_())])
def test_an_answer_that_is_no_integer_is_refused_by_both_readers(tmp_path, answer, kind):
    path = lines(tmp_path / "items.jsonl", ITEM, ITEM | {"id": "q2", "answer": answer})
    refused(lambda: read_jsonl(path), path, 2, "answer", "valid integer")
    path = parquet_with(tmp_path / "items.parquet", "answer", [answer, answer], kind)  # a column of its type
    refused(lambda: read_parquet(path), path, 1, "answer", "valid integer")


def test_a_duplicate_id_is_refused_by_both_readers(tmp_path):
    path = lines(tmp_path / "items.jsonl", ITEM, ITEM)
    refused(lambda: read_jsonl(path), path, 2, "id", "duplicate id 'q1', first used on line 1")
    path = parquet_with(tmp_path / "items.parquet", "id", ["q1", "q1"], pa.string())
    refused(lambda: read_parquet(path), path, 2, "id", "duplicate id 'q1', first used on line 1")


def test_four_identical_options_are_refused_everywhere(tmp_path):
    same = ["x", "x", "x", "x"]
    path = lines(tmp_path / "items.jsonl", ITEM | {"options": same})
    refused(lambda: read_jsonl(path), path, 1, "options", "option 1 .* repeats option 0")
    path = parquet_with(tmp_path / "items.parquet", "options", [same, ITEM["options"]], pa.list_(pa.string()))
    refused(lambda: read_parquet(path), path, 1, "options", "option 1 .* repeats option 0")
    path = lines(tmp_path / "adaxeval.jsonl", {"id": 1, "question": "Q?", "options": same, "answer_idx": 0})
    assert [(r.line, r.field) for r in read_adaxeval(path).invalid] == [(1, "options")]
    path = tmp_path / "Japanese.json"
    path.write_text(json.dumps([PAIR | {"transchoices": ["x", "x"]}]), encoding="utf-8")
    assert [(r.line, r.field) for r in read_pitfalls(path).invalid] == [(1, "transchoices")]
    assert read_pair_file(path).flaw_counts["duplicate_choice"] == 1
    path.write_text(json.dumps([{"question": "Q?", "choices": same, "answer": "x"}]), encoding="utf-8")
    with pytest.raises(InputError, match="no English multiple-choice question"):
        read_source_file(path)  # its one question reported as unusable


# ---- sequence variants: read_variants refuses what read_sequences refuses ---------------------------------------


@pytest.mark.parametrize(("change", "field"), [
    ({"x": 50}, "x"), ({"text": ""}, "text"), ({"text": " \n"}, "text"),
    ({"method": "mask", "level": "token", "x": 8, "token_ids": []}, "token_ids"),
])
def test_read_variants_refuses_a_variant_with_nothing_to_score_or_settings_it_takes_not(tmp_path, change, field):
    path = lines(tmp_path / "variants.jsonl", VARIANT | change)
    refused(lambda: list(read_variants(iter_json_lines(path), path)), path, 1, field)


# ---- review sheets ----------------------------------------------------------------------------------------------


def test_an_item_listed_twice_in_a_score_sheet_is_refused_not_counted_twice(tmp_path):
    header = ["item_id", "lang", *(column for column, _ in score_columns())]
    row = ["q1", "en", *("1" for _ in score_columns())]
    path = tmp_path / "sheet.csv"
    path.write_text("\n".join(",".join(cells) for cells in (header, row, row)) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"row 2, column 'item_id': item q1 \(en\) repeats row 1"):
        score_sheet(path)
    path.write_text("\n".join(",".join(cells) for cells in (header, ["q1", "english", *row[2:]])) + "\n")
    with pytest.raises(InputError, match="column 'lang': 'english' is not a language tag"):
        score_sheet(path)


# ---- the readers moved onto guarded.py --------------------------------------------------------------------------


def test_a_list_valued_oriquestion_is_refused_by_name(tmp_path):
    path = tmp_path / "Japanese.json"
    path.write_text(json.dumps([PAIR, PAIR | {"oriquestion": ["a", "list"]}]), encoding="utf-8")
    refused(lambda: read_pair_file(path), path, 2, "oriquestion", "expected a string, found a list")


def test_a_sources_json_that_is_no_sample_is_refused_by_name(tmp_path):
    path = tmp_path / "sources.json"
    path.write_text('{"seed": "one"}', encoding="utf-8")
    refused(lambda: read_source_sample(path), path, None, "seed")
    path.write_text("{", encoding="utf-8")
    refused(lambda: read_source_sample(path), path, 1, None, "invalid JSON")


def test_a_released_source_file_that_is_no_json_is_refused_by_name(tmp_path):
    path = tmp_path / "mmlu.json"
    path.write_text('[{"question": "Q?", "choices": ["a", "b"], "answer": "a"}', encoding="utf-8")
    refused(lambda: read_source_file(path), path, 1, None, "invalid JSON")
    path.write_bytes(b'[{"question": "Q\xff?"}]')
    refused(lambda: read_source_file(path), path, 1, None, "not UTF-8")


@pytest.mark.parametrize(("text", "field"), [
    ("- a list", None), ("qa: [one]", "qa"), ("qa: {en: [1]}", "qa.en[0]"), ("qa: {en: ['{x']}", "qa.en[0]"),
    ("qa: {en: [a, b", None),
])
def test_a_template_table_of_the_wrong_shape_is_refused_by_name(tmp_path, text, field):
    path = tmp_path / "templates.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        TemplateTable.load(path)
    assert (info.value.path, info.value.field) == (str(path), field)


@pytest.mark.parametrize("text", ["model: [1, 2]", "- model"])
def test_a_training_run_config_without_a_model_entry_names_the_file(tmp_path, text):
    """A config.yaml that parses but holds no string 'model' (a list value, or no mapping at all) is no train run."""
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    config = tmp_path / "run" / "config.yaml"
    config.write_text(text, encoding="utf-8")
    with pytest.raises(CrossknowError) as info:
        discover_checkpoints([str(tmp_path / "run")])
    assert type(info.value) is CrossknowError
    assert str(info.value) == f"{config}: no 'model' entry; is {tmp_path / 'run'} a crossknow train run?"


def test_a_training_run_config_that_is_no_yaml_names_the_file_and_line(tmp_path):
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    config = tmp_path / "run" / "config.yaml"
    config.write_text("[", encoding="utf-8")
    refused(lambda: discover_checkpoints([str(tmp_path / "run")]), config, 1, None,
            "not valid YAML: expected the node content, but found '<stream end>'")


def test_load_item_set_agrees_with_read_jsonl_on_a_strict_answer(tmp_path):
    path = lines(tmp_path / "items.jsonl", ITEM | {"answer": "1"})
    refused(lambda: load_item_set(path), path, 1, "answer", "valid integer")


def test_a_parquet_string_that_is_not_utf8_is_refused_by_name(tmp_path):
    # found by the fuzz suite: pyarrow reads the bytes unchecked, and to_pylist raised UnicodeDecodeError
    path = tmp_path / "items.parquet"
    pq.write_table(items_table([MCItem(**ITEM | {"prompt": "What is it?"})]), path, compression="none")
    path.write_bytes(path.read_bytes().replace(b"What is it?", b"What\xffis it?"))
    refused(lambda: read_parquet(path), path, None, None, "cannot read as Parquet")
