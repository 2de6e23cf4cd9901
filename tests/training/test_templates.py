"""The shipped instruction template table and its lookups."""

from __future__ import annotations

import random
import re
import string
from pathlib import Path

import pytest

from crossknow.errors import CrossknowError
from crossknow.training.instructions import INSTRUCTION_TYPES
from crossknow.training.templates import PickedTemplate, TemplateTable, fill

PLACEHOLDERS: dict[str, tuple[set[str], str]] = {
    "summarisation": ({"abstract"}, "title"),
    "keyword_extraction": ({"abstract"}, "keywords"),
    "field_identification": ({"abstract"}, "fields"),
    "translation": ({"source_lang", "target_lang", "source"}, "target"),
    "text_completion": ({"partial"}, "remainder"),
    "conclusion_derivation": ({"context"}, "conclusion"),
    "background_derivation": ({"context"}, "background"),
    "diagnosis": ({"symptoms"}, "diagnosis"),
    "reordering": ({"shuffled"}, "ordered"),
    "gmrc": ({"given", "missing_name"}, "missing"),
    "romanisation": ({"romaji"}, "text"),
    "roman2en": ({"romaji"}, "english"),
}
"""(input placeholders, output placeholder) of each type, as Appendix A.4.1 and section 6.1 define the tasks."""

BY_LANGUAGE: dict[tuple[str, str], tuple[set[str], str]] = {("roman2en", "en"): ({"english"}, "romaji")}
"""Where the direction depends on the document's language: roman2en from an English document is English ->
romaji (section 6.1(2): translation between romanized Japanese and English, both ways)."""

TRANSFER_TYPES = ("romanisation", "roman2en")

LANGUAGES = {"romanisation": {"ja"}, "roman2en": {"ja", "en"}}
"""The document languages of the transfer types (the ten reading-comprehension types have en and ja)."""


@pytest.fixture(scope="module")
def table() -> TemplateTable:
    """The table shipped with crossknow."""
    return TemplateTable.load()


def test_the_table_has_the_ten_types_and_the_two_transfer_types(table: TemplateTable) -> None:
    assert set(INSTRUCTION_TYPES) == set(PLACEHOLDERS) - set(TRANSFER_TYPES)
    assert set(table.table) == set(PLACEHOLDERS)


@pytest.mark.parametrize("type_", list(PLACEHOLDERS))
def test_ten_distinct_templates_per_type_and_language(table: TemplateTable, type_: str) -> None:
    expected_langs = LANGUAGES.get(type_, {"en", "ja"})
    assert set(table.table[type_]) == expected_langs
    for lang in expected_langs:
        templates = table.templates(type_, lang)
        assert len(templates) == 10, (type_, lang)
        assert len(set(templates)) == 10, (type_, lang)


@pytest.mark.parametrize("type_", list(PLACEHOLDERS))
def test_every_template_uses_its_placeholders_once_and_ends_with_the_output(table: TemplateTable, type_: str) -> None:
    for lang, templates in table.table[type_].items():
        inputs, output = BY_LANGUAGE.get((type_, lang), PLACEHOLDERS[type_])
        for index, template in enumerate(templates):
            where = (type_, lang, index)
            names = [name for _, name, spec, conv in string.Formatter().parse(template) if name is not None]
            assert sorted(names) == sorted(inputs | {output}), where  # each exactly once, nothing else
            assert template.endswith("{" + output + "}"), where
            # No stray braces: removing the placeholders leaves none.
            assert not re.search(r"[{}]", re.sub(r"\{\w+\}", "", template)), where


@pytest.mark.parametrize("type_", list(PLACEHOLDERS))
def test_instruction_wording_is_in_the_documents_language(table: TemplateTable, type_: str) -> None:
    japanese = re.compile(r"[\u3000-\u30ff\u4e00-\u9fff\uff00-\uffef]")  # kana, kanji, full-width punctuation
    latin = re.compile(r"[A-Za-z]")
    for lang, templates in table.table[type_].items():
        for index, template in enumerate(templates):
            wording = re.sub(r"\{\w+\}", "", template)
            # (A template may have no wording of its own: "{source_lang}: {source}\n{target_lang}: {target}".)
            foreign = japanese if lang == "en" else latin
            assert not foreign.search(wording), (type_, lang, index)


def test_a_missing_language_names_the_type_and_the_language(table: TemplateTable) -> None:
    with pytest.raises(CrossknowError, match=r"'summarisation'.*'zh'"):
        table.templates("summarisation", "zh")
    with pytest.raises(CrossknowError, match=r"'romanisation'.*'en'"):
        table.pick("romanisation", "en", random.Random(0))


def test_an_unknown_type_is_an_error(table: TemplateTable) -> None:
    with pytest.raises(CrossknowError, match="'poetry'"):
        table.templates("poetry", "en")


def test_an_empty_list_counts_as_missing_in_a_users_table(tmp_path: Path) -> None:
    path = tmp_path / "templates.yaml"
    path.write_text("summarisation:\n  en: []\n  ja: ['{abstract} {title}']\n", encoding="utf-8")
    custom = TemplateTable.load(path)
    assert custom.templates("summarisation", "ja") == ["{abstract} {title}"]
    with pytest.raises(CrossknowError, match=re.escape(str(path))):
        custom.templates("summarisation", "en")


def test_pick_draws_every_template_with_a_seeded_generator(table: TemplateTable) -> None:
    first = [table.pick("diagnosis", "en", random.Random(seed)).index for seed in range(200)]
    again = [table.pick("diagnosis", "en", random.Random(seed)).index for seed in range(200)]
    assert first == again
    assert set(first) == set(range(10))  # 200 draws miss one of 10 templates with probability ~1e-8


def test_fill_refuses_a_missing_value() -> None:
    picked = PickedTemplate("summarisation", 3, "{abstract}\nTitle: {title}")
    assert fill(picked, {"abstract": "A.", "title": "T"}) == "A.\nTitle: T"
    with pytest.raises(CrossknowError, match=r"summarisation template 3 needs \['title'\]"):
        fill(picked, {"abstract": "A."})
