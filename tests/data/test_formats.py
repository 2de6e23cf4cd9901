import json

import pytest

from crossknow.data.formats import FORMATS, detect_format, load_item_set
from crossknow.data.jsonl import write_jsonl
from crossknow.data.parquet import write_parquet
from crossknow.data.schemas import MCItem, QAItem
from crossknow.errors import InputError

from ..conftest import SHARED_DATA as SHARED

needs_shared = pytest.mark.skipif(not SHARED.exists(), reason=f"{SHARED} is not present")
RELEASE = SHARED / "cross-lingual-pitfalls"

MC = MCItem(id="a", lang="en", kind="question", prompt="Q?", options=["x", "y"], answer=1)
QA = QAItem(id="b", lang="en", question="Q?", answer="A")


def write_lines(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@needs_shared
def test_real_files_are_detected_and_read():
    examples = load_item_set(SHARED / "adaxeval-paper-examples.jsonl")
    assert (examples.format, examples.name, len(examples.items)) == (
        "adaxeval",
        "adaxeval-paper-examples",
        40,
    )
    pitfalls = load_item_set(RELEASE / "Japanese.json", limit=3)
    assert pitfalls.format == "pitfalls"
    assert [item.id for item in pitfalls.items] == ["en:0", "ja:0", "en:1", "ja:1", "en:2", "ja:2"]


@needs_shared
@pytest.mark.parametrize(
    "name", ["Yoruba_results.json", "source/sciq.json", "README.md", "LICENSE"]
)
def test_other_release_files_are_refused_naming_the_known_formats(name):
    with pytest.raises(InputError) as info:
        load_item_set(RELEASE / name)
    assert str(RELEASE / name) in str(info.value)
    assert all(fmt in str(info.value) for fmt in FORMATS)


def test_our_own_files_and_eclektic_are_detected(tmp_path):
    assert detect_format(write_jsonl(tmp_path / "mc.jsonl", [MC])) == "jsonl"
    assert detect_format(write_jsonl(tmp_path / "qa.jsonl", [QA])) == "jsonl"
    assert detect_format(write_parquet(tmp_path / "mc.parquet", [MC])) == "parquet"
    eclektic = write_lines(
        tmp_path / "e.jsonl", [{"q_id": 1, "original_lang": "en", "en_q": "Q", "en_a": "A"}]
    )
    assert detect_format(eclektic) == "eclektic"
    assert [item.id for item in load_item_set(eclektic).items] == ["1:en"]
    assert load_item_set(tmp_path / "mc.parquet").items == [MC]
    release = write_lines(
        tmp_path / "r.json", [{"id": 1, "question": "Q?", "options": ["x", "y"], "answer_idx": 0}]
    )
    assert detect_format(release) == "adaxeval"


def test_an_explicit_format_skips_detection(tmp_path):
    path = write_jsonl(tmp_path / "mc.jsonl", [MC])
    assert load_item_set(path, fmt="jsonl").items == [MC]
    not_pairs = tmp_path / "French.json"
    not_pairs.write_text('[{"question": "Q?"}]')
    with pytest.raises(InputError, match="line 1: field 'transquestion'"):
        load_item_set(not_pairs, fmt="pitfalls")
    with pytest.raises(InputError, match="unknown format 'csv'"):
        load_item_set(path, fmt="csv")


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ('{"foo": 1, "bar": 2}\n', "cannot tell the format from the keys (bar, foo)"),
        ("[1, 2]", "no 'transquestion'"),
        ("id,question\n", "neither JSON lines nor a JSON list"),
        ("{not json\n", "invalid JSON"),
    ],
)
def test_unknown_content_names_the_known_formats(tmp_path, content, words):
    path = tmp_path / "x.jsonl"
    path.write_text(content)
    with pytest.raises(InputError) as info:
        detect_format(path)
    assert words in str(info.value) and str(path) in str(info.value)
    if words != "invalid JSON":
        assert "known formats" in str(info.value)


def test_lang_only_for_adaxeval_and_limit(tmp_path):
    path = write_jsonl(tmp_path / "mc.jsonl", [MC, MC.model_copy(update={"id": "c"})])
    with pytest.raises(InputError, match="only be given for AdaXEval"):
        load_item_set(path, lang="en")
    assert [item.id for item in load_item_set(path, limit=1).items] == ["a"]
    release = write_lines(
        tmp_path / "r.jsonl", [{"id": 1, "question": "Q?", "options": ["x", "y"], "answer_idx": 0}]
    )
    assert load_item_set(release, lang="ja").items[0].lang == "ja"
