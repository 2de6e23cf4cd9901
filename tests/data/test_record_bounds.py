"""Records are validated for sense, not only type: language tags, id lengths, option counts and lengths."""

from __future__ import annotations

import json
from pathlib import Path

import pydantic
import pytest

from crossknow.data.jsonl import read_jsonl
from crossknow.data.schemas import MAX_ID_CHARS, MAX_OPTIONS, MCItem, QAItem
from crossknow.errors import InputError


def mc(**overrides) -> MCItem:
    fields = {"id": "a", "lang": "en", "kind": "question", "prompt": "q?", "options": ["x", "y"], "answer": 0}
    return MCItem(**(fields | overrides))


@pytest.mark.parametrize("lang", ["en", "ja", "yo", "fil", "zh-Hant", "pt-BR", "sr-Latn-RS"])
def test_real_language_tags_are_accepted(lang: str) -> None:
    assert mc(lang=lang).lang == lang
    assert QAItem(id="q", lang=lang, question="?", answer="!", source_lang=lang).source_lang == lang


@pytest.mark.parametrize("lang", ["x" * 200_000, "english", "e n", "", "en_US", "12", "en-"])
def test_a_value_that_is_no_language_tag_is_refused(lang: str) -> None:
    with pytest.raises(pydantic.ValidationError, match="not a language tag"):
        mc(lang=lang)


def test_ids_options_and_texts_have_bounds() -> None:
    assert mc(id="i" * MAX_ID_CHARS).id
    with pytest.raises(pydantic.ValidationError):
        mc(id="i" * (MAX_ID_CHARS + 1))
    with pytest.raises(pydantic.ValidationError):
        mc(options=[f"o{i}" for i in range(MAX_OPTIONS + 1)])
    with pytest.raises(pydantic.ValidationError):
        mc(options=["x" * 20_000, "y"])
    with pytest.raises(pydantic.ValidationError):
        mc(pair_id="p" * 10_000)


def test_a_huge_language_field_is_a_brief_error_naming_file_line_and_field(tmp_path: Path) -> None:
    """The malformed-input harness's case: a record whose lang held 200,000 characters was scored, and the
    string printed as a table row. Our JSONL format refuses a bad record with one clear, short message."""
    good = {"id": "a", "lang": "en", "kind": "question", "prompt": "q?", "options": ["x", "y"], "answer": 0}
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(good | {"id": "b", "lang": "x" * 200_000}) + "\n")
    with pytest.raises(InputError, match="line 2: field 'lang'.*not a language tag") as error:
        read_jsonl(path)
    assert len(str(error.value)) < 400
