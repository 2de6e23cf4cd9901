import json

import pytest

from crossknow.data.eclektic import LANGUAGES, read_eclektic
from crossknow.errors import InputError


def row(q_id=1, original_lang="de", drop=(), **changes):
    record = {
        "q_id": q_id,
        "original_lang": original_lang,
        "title": "Snooker-WM 2023",
        "url": "https://de.wikipedia.org/x",
        "content": "Die Cazoo ...",
        "question": "Wer?",
        "answer": "Brecel",
    }
    for lang in LANGUAGES:
        record.update(
            {
                f"{lang}_q": f"question in {lang}",
                f"{lang}_a": f"answer in {lang}",
                f"{lang}_c": f"context {lang}",
            }
        )
    for key in drop:
        record.pop(key)
    record.update(changes)
    return record


def write(path, records):
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )
    return path


def test_one_item_per_question_and_language(tmp_path):
    path = write(
        tmp_path / "eclektic.jsonl",
        [
            row(q_id=1),
            row(
                q_id=2,
                original_lang="ja",
                drop=("fr_q", "fr_a", "fr_c"),
                ko_q="",
                ko_a="",
                he_c=None,
            ),
        ],
    )
    item_set = read_eclektic(path)
    assert item_set.invalid == [] and item_set.format == "eclektic"
    ids = [item.id for item in item_set.items]
    assert ids[:12] == [f"1:{lang}" for lang in LANGUAGES]
    assert len(ids) == 12 + 10 and "2:fr" not in ids and "2:ko" not in ids
    item = next(item for item in item_set.items if item.id == "2:ja")
    assert (item.lang, item.question, item.answer, item.context) == (
        "ja",
        "question in ja",
        "answer in ja",
        "context ja",
    )
    assert (item.source_lang, item.pair_id) == ("ja", "2")
    assert item.metadata == {"title": "Snooker-WM 2023", "url": "https://de.wikipedia.org/x"}
    assert next(item for item in item_set.items if item.id == "2:he").context is None


def test_half_present_language_duplicate_and_empty_rows_are_reported(tmp_path):
    path = write(
        tmp_path / "e.jsonl",
        [
            row(q_id=1, drop=("es_a",)),
            row(q_id=1),
            row(q_id=3, **{f"{lang}_{s}": None for lang in LANGUAGES for s in "qa"}),
        ],
    )
    item_set = read_eclektic(path)
    assert len(item_set.items) == 11
    assert [(r.line, r.field) for r in item_set.invalid] == [(1, "es_a"), (2, "q_id"), (3, "de_q")]
    assert "es question has no answer" in item_set.invalid[0].reason


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (row(q_id=2, drop=("original_lang",)), "original_lang"),
        (row(q_id=2, en_q=["a list"]), "en_q"),
        (row(q_id=2, title=5), "title"),
        (row(q_id=None), "q_id"),
        (row(q_id=2, original_lang="english"), "original_lang"),  # the QAItem's source_lang, named as the file does
        (row(q_id="x" * 300), "q_id"),
        (row(q_id=2, en_q="x" * 100_001), "en_q"),
        (row(q_id=2, ja_a=" " + "y" * 100_000), "ja_a"),
    ],
)
def test_malformed_row_names_line_and_field(tmp_path, bad, field):
    path = write(tmp_path / "e.jsonl", [row(), bad])
    with pytest.raises(InputError) as info:
        read_eclektic(path)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), 2, field)
    assert f"line 2: field '{field}'" in str(info.value)


def test_a_lone_surrogate_is_refused_with_the_file_line_and_field(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text(json.dumps(row()) + "\n" + json.dumps(row(q_id=2, de_q="\ud800?")) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="lone surrogate") as info:
        read_eclektic(path)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), 2, "de_q")


def test_limit(tmp_path):
    path = write(tmp_path / "e.jsonl", [row(q_id=1), row(q_id=2)])
    assert [item.id for item in read_eclektic(path, limit=13).items][-2:] == ["1:zh", "2:de"]
