"""Reading-comprehension instructions (Appendix A.4.1) mined from constructed documents."""

from __future__ import annotations

import re
import string
from typing import Any

import pytest

from crossknow.data.corpus import Document
from crossknow.data.sentences import split_sentences
from crossknow.training.instructions import INSTRUCTION_TYPES, Instruction, reading_comprehension
from crossknow.training.templates import TemplateTable

EN_SENTENCES = [
    "Zorvine is a grey mineral found only in the Tal basin.",
    "It dissolves slowly in cold water but quickly in brine.",
    "Miners grind it to line the walls of copper furnaces.",
    "Its fine dust irritates the lungs of unprotected workers.",
]
JA_SENTENCES = [
    "ゾルビンはタル盆地でのみ見つかる灰色の鉱物である。",
    "冷水にはゆっくり溶けるが、塩水には速やかに溶ける。",
    "鉱夫はそれを砕いて銅炉の壁に塗る。",
    "その細かい粉塵は防護のない作業者の肺を刺激する。",
]
SECTIONS_EN = {
    "goal": "To find a cheap furnace lining.",
    "method": "We ground zorvine and coated twelve furnaces.",
    "result": "Coated furnaces lasted twice as long.",
    "conclusion": "Zorvine is a durable furnace lining.",
    "background": "Furnace linings wear out within months.",
}
SECTIONS_JA = {
    "goal": "安価な炉の内張りを見つけること。",
    "method": "ゾルビンを砕いて十二基の炉に塗布した。",
    "result": "塗布した炉は二倍長持ちした。",
    "conclusion": "ゾルビンは耐久性のある炉の内張りである。",
    "background": "炉の内張りは数か月で摩耗する。",
}
SEPARATOR = {"en": ", ", "ja": "、"}
JOINER = {"en": " ", "ja": ""}
SENTENCE_TYPES = ("text_completion", "conclusion_derivation", "background_derivation", "reordering")


@pytest.fixture(scope="module")
def table() -> TemplateTable:
    """The shipped template table."""
    return TemplateTable.load()


def full_document(lang: str, doc_id: str = "zorvine") -> Document:
    """A document in `lang` with every metadata field that some instruction type needs."""
    sentences, sections = (EN_SENTENCES, SECTIONS_EN) if lang == "en" else (JA_SENTENCES, SECTIONS_JA)
    metadata: dict[str, Any] = {
        "title": "Zorvine, a furnace lining" if lang == "en" else "炉の内張りとしてのゾルビン",
        "abstract": sections["goal"] + JOINER[lang] + sections["result"],
        "keywords": ["zorvine", "furnace", "lining"] if lang == "en" else ["ゾルビン", "炉", "内張り"],
        "fields": ["mineralogy", "metallurgy"] if lang == "en" else ["鉱物学", "冶金学"],
        "sections": sections,
        "symptoms": "Cough and wheezing after shifts in the mill." if lang == "en" else "製粉所での勤務後の咳と喘鳴。",
        "diagnosis": "Zorvine pneumoconiosis" if lang == "en" else "ゾルビン塵肺",
        "pair_id": doc_id,
    }
    return Document(id=f"{doc_id}-{lang}", lang=lang, text=JOINER[lang].join(sentences), metadata=metadata)


def plain_document(sentences: list[str], lang: str = "en", doc_id: str = "plain") -> Document:
    """A document with no metadata at all."""
    return Document(id=doc_id, lang=lang, text=JOINER[lang].join(sentences))


def by_type(instructions: list[Instruction]) -> dict[str, Instruction]:
    """The instructions keyed by type (each type appears at most once)."""
    types = [ins.type for ins in instructions]
    assert len(types) == len(set(types)), types
    return {ins.type: ins for ins in instructions}


def matches_template(text: str, template: str) -> bool:
    """Whether `text` is `template` with some text in place of each placeholder."""
    pattern = "".join(re.escape(literal) + ("(.+?)" if name else "")
                      for literal, name, _, _ in string.Formatter().parse(template))
    return re.fullmatch(pattern, text, flags=re.DOTALL) is not None


def numbered_lines(text: str) -> list[tuple[int, str]]:
    """The '<n>. <sentence>' lines of a reordering instruction."""
    return [(int(m.group(1)), m.group(2)) for m in re.finditer(r"^(\d+)\. (.+)$", text, flags=re.MULTILINE)]


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_the_sentences_split_as_written(lang: str) -> None:
    # A precondition of the expectations below: pysbd splits the constructed texts into our sentences.
    sentences = EN_SENTENCES if lang == "en" else JA_SENTENCES
    assert split_sentences(JOINER[lang].join(sentences), lang) == sentences


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_a_document_with_all_metadata_and_a_partner_gets_all_ten_types(table: TemplateTable, lang: str) -> None:
    doc = full_document(lang)
    partner = full_document("ja" if lang == "en" else "en")
    sentences = EN_SENTENCES if lang == "en" else JA_SENTENCES
    sections, meta = doc.metadata["sections"], doc.metadata
    built = by_type(reading_comprehension(doc, partner, table, seed=0))
    assert list(built) == list(INSTRUCTION_TYPES)

    expected_output = {
        "summarisation": meta["title"],
        "keyword_extraction": SEPARATOR[lang].join(meta["keywords"]),
        "field_identification": SEPARATOR[lang].join(meta["fields"]),
        "translation": partner.text,
        "text_completion": JOINER[lang].join(sentences[2:]),
        "conclusion_derivation": sections["conclusion"],
        "background_derivation": sections["background"],
        "diagnosis": meta["diagnosis"],
        "reordering": doc.text,
    }
    expected_input = {
        "summarisation": meta["abstract"], "keyword_extraction": meta["abstract"],
        "field_identification": meta["abstract"], "translation": doc.text,
        "text_completion": JOINER[lang].join(sentences[:2]), "conclusion_derivation": meta["abstract"],
        "background_derivation": meta["abstract"], "diagnosis": meta["symptoms"],
    }
    for type_, output in expected_output.items():
        assert built[type_].text.endswith(output), type_
    for type_, given in expected_input.items():
        assert given in built[type_].text.removesuffix(expected_output[type_]), type_
    # Each text is the drawn template, filled in.
    for type_, ins in built.items():
        template = table.templates(type_, lang)[ins.template_index]
        assert matches_template(ins.text, template), (type_, ins.template_index)
    names = {"en": ("English", "Japanese"), "ja": ("日本語", "英語")}[lang]
    assert all(name in built["translation"].text for name in names)


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_gmrc_hides_one_part_and_asks_for_it_last(table: TemplateTable, lang: str) -> None:
    hidden = set()
    for number in range(40):
        doc = full_document(lang, doc_id=f"doc{number}")
        text = by_type(reading_comprehension(doc, None, table, seed=0))["gmrc"].text
        parts = {part: doc.metadata["sections"][part] for part in ("goal", "method", "result", "conclusion")}
        missing = [part for part, value in parts.items() if text.endswith(value)]
        assert len(missing) == 1, text
        assert text.count(parts[missing[0]]) == 1  # the hidden part appears only as the answer
        assert all(value in text for part, value in parts.items() if part != missing[0])
        hidden.add(missing[0])
    assert hidden == {"goal", "method", "result", "conclusion"}


def test_without_a_partner_there_is_no_translation(table: TemplateTable) -> None:
    built = by_type(reading_comprehension(full_document("en"), None, table, seed=0))
    assert set(built) == set(INSTRUCTION_TYPES) - {"translation"}


@pytest.mark.parametrize(
    ("count", "expected"),
    [(1, set()), (2, {"text_completion"}), (3, set(SENTENCE_TYPES)), (4, set(SENTENCE_TYPES))],
)
def test_without_metadata_only_sentence_types_by_sentence_count(
    table: TemplateTable, count: int, expected: set[str]
) -> None:
    doc = plain_document(EN_SENTENCES[:count])
    built = by_type(reading_comprehension(doc, None, table, seed=0))
    assert set(built) == expected
    if count >= 3:  # derived from the sentences: the last one, then the first one, is the answer
        assert built["conclusion_derivation"].text.endswith(EN_SENTENCES[count - 1])
        assert EN_SENTENCES[count - 1] not in built["conclusion_derivation"].text.removesuffix(EN_SENTENCES[count - 1])
        assert built["background_derivation"].text.endswith(EN_SENTENCES[0])
        assert EN_SENTENCES[0] not in built["background_derivation"].text.removesuffix(EN_SENTENCES[0])
    if count >= 2:
        half = count // 2
        completion = built["text_completion"].text
        assert completion.endswith(" ".join(EN_SENTENCES[half:count]))
        assert " ".join(EN_SENTENCES[:half]) in completion


@pytest.mark.parametrize("count", [3, 4])
def test_reordering_shows_a_true_shuffle_and_answers_with_the_text(table: TemplateTable, count: int) -> None:
    sentences = EN_SENTENCES[:count]
    orders = set()
    for number in range(30):
        doc = plain_document(sentences, doc_id=f"doc{number}")
        text = by_type(reading_comprehension(doc, None, table, seed=3))["reordering"].text
        assert text.endswith(doc.text)
        lines = numbered_lines(text)
        assert [n for n, _ in lines] == list(range(1, count + 1))
        shown = [sentence for _, sentence in lines]
        assert sorted(shown) == sorted(sentences)  # a permutation of the sentences
        assert shown != sentences  # and never the original order
        orders.add(tuple(shown))
    assert len(orders) > 1


def test_japanese_reordering(table: TemplateTable) -> None:
    doc = plain_document(JA_SENTENCES, lang="ja")
    text = by_type(reading_comprehension(doc, None, table, seed=0))["reordering"].text
    shown = [sentence for _, sentence in numbered_lines(text)]
    assert sorted(shown) == sorted(JA_SENTENCES) and shown != JA_SENTENCES
    assert text.endswith("".join(JA_SENTENCES))


def picks(docs: list[Document], seed: int, table: TemplateTable) -> list[tuple[str, str, int]]:
    """(document id, type, template index) of every instruction built from `docs`."""
    return [(doc.id, ins.type, ins.template_index)
            for doc in docs for ins in reading_comprehension(doc, None, table, seed=seed)]


def test_template_draws_depend_on_seed_and_document_id(table: TemplateTable) -> None:
    docs = [full_document("en", doc_id=f"doc{number:02d}") for number in range(20)]
    first = picks(docs, 0, table)
    assert first == picks(docs, 0, table)
    assert first == picks(docs, 0, TemplateTable.load())  # nothing depends on the table object's state
    other_seed = picks(docs, 1, table)
    assert [(d, t) for d, t, _ in other_seed] == [(d, t) for d, t, _ in first]
    assert other_seed != first
    # Draws are spread over the templates, not stuck on one.
    for type_ in ("summarisation", "diagnosis"):
        assert len({index for _, t, index in first if t == type_}) >= 5


def test_the_same_id_draws_the_same_templates_whatever_comes_before(table: TemplateTable) -> None:
    doc = full_document("en", doc_id="target")
    alone = reading_comprehension(doc, None, table, seed=5)
    for number in range(3):  # other documents drawn first do not move the target's draws
        reading_comprehension(full_document("en", doc_id=f"other{number}"), None, table, seed=5)
    assert reading_comprehension(doc, None, table, seed=5) == alone
