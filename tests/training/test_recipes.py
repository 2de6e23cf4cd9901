"""The training corpora of section 6.1 built from the packaged demo corpus: C_K and C_T."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from crossknow.data.corpus import Document, read_corpus
from crossknow.errors import CrossknowError
from crossknow.training.recipes import build_parts, knowledge_examples, transfer_examples
from crossknow.training.records import TrainConfig
from crossknow.training.templates import TemplateTable

from .tiny_run import DEMO_DIR

JAPANESE = re.compile(r"[\u3000-\u30ff\u4e00-\u9fff\uff00-\uffef]")
"""Kana, kanji and full-width punctuation: a trace of Japanese text."""

KNOWLEDGE_FACTS = {f"f{n:02d}" for n in range(1, 21)}
"""The first 20 facts of the demo corpus are the knowledge corpus here; the other 20 serve as C_T."""


@pytest.fixture(scope="module")
def table() -> TemplateTable:
    """The shipped template table."""
    return TemplateTable.load()


@pytest.fixture(scope="module")
def demo_docs() -> list[Document]:
    """The 80 documents of the demo corpus (40 facts, English and Japanese)."""
    return read_corpus(DEMO_DIR / "corpus.jsonl")


def write_corpus(path: Path, docs: list[Document]) -> Path:
    """Write `docs` as a corpus file."""
    path.write_text("".join(json.dumps(d.model_dump(), ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def split_corpora(demo_docs: list[Document], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """C_K (facts f01-f20) and a disjoint C_T (facts f21-f40 plus one unpaired English document), as files."""
    root = tmp_path_factory.mktemp("corpora")
    knowledge = [d for d in demo_docs if d.metadata["pair_id"] in KNOWLEDGE_FACTS]
    transfer = [d for d in demo_docs if d.metadata["pair_id"] not in KNOWLEDGE_FACTS]
    transfer.append(Document(id="lonely-en", lang="en", text="A document without a translation. It has two."))
    return {"knowledge": knowledge, "transfer": transfer,
            "knowledge_path": write_corpus(root / "knowledge.jsonl", knowledge),
            "transfer_path": write_corpus(root / "transfer.jsonl", transfer)}


def config(corpus: Path | str, langs: list[str], **fields: Any) -> TrainConfig:
    """A TrainConfig for recipe tests (the model is never loaded)."""
    return TrainConfig(model="default", corpus=str(corpus), langs=langs, **fields)


def pairs_of(docs: list[Document]) -> dict[str, dict[str, Document]]:
    """pair_id -> {lang: document}."""
    pairs: dict[str, dict[str, Document]] = {}
    for doc in docs:
        if doc.metadata.get("pair_id"):
            pairs.setdefault(doc.metadata["pair_id"], {})[doc.lang] = doc
    return pairs


def test_english_documents_only(demo_docs: list[Document], table: TemplateTable) -> None:
    examples = knowledge_examples(config(DEMO_DIR / "corpus.jsonl", ["en"]), demo_docs, table)
    english = {d.id: d.text for d in demo_docs if d.lang == "en"}
    assert len(english) == 40
    assert [e.kind for e in examples] == ["document"] * 40
    assert {e.doc_id: e.text for e in examples} == english
    assert all(e.part == "knowledge" and e.template_index is None for e in examples)
    assert not any(JAPANESE.search(e.text) for e in examples)


def test_english_instructions_never_show_japanese(demo_docs: list[Document], table: TemplateTable) -> None:
    cfg = config(DEMO_DIR / "corpus.jsonl", ["en"], recipe="instruction", qa_pairs=0)
    examples = knowledge_examples(cfg, demo_docs, table)
    leaks = [e.id for e in examples if JAPANESE.search(e.text)]
    assert leaks == []
    kinds = Counter(e.kind for e in examples)
    assert kinds["document"] == 40
    assert "translation" not in kinds  # the Japanese partners are not in langs
    # Every demo document has a title, keywords and fields, so these are built for all 40.
    assert kinds["summarisation"] == kinds["keyword_extraction"] == kinds["field_identification"] == 40
    assert {e.doc_id for e in examples} == {d.id for d in demo_docs if d.lang == "en"}
    assert len({e.id for e in examples}) == len(examples)


def test_both_languages_with_instructions_translate_each_pair_both_ways(
    demo_docs: list[Document], table: TemplateTable
) -> None:
    examples = knowledge_examples(config(DEMO_DIR / "corpus.jsonl", ["en", "ja"], recipe="instruction", qa_pairs=0),
                                  demo_docs, table)
    by_id = {d.id: d for d in demo_docs}
    partners = pairs_of(demo_docs)
    translations = [e for e in examples if e.kind == "translation"]
    assert len(translations) == 80
    for example in translations:
        doc = by_id[example.doc_id]
        partner = partners[doc.metadata["pair_id"]]["ja" if doc.lang == "en" else "en"]
        assert example.text.endswith(partner.text)
        assert doc.text in example.text


def test_translation_transfer_builds_both_directions_of_every_pair(
    split_corpora: dict[str, Any], table: TemplateTable
) -> None:
    cfg = config(split_corpora["knowledge_path"], ["en"], transfer_corpus=str(split_corpora["transfer_path"]),
                 transfer_recipe="translation")
    examples = transfer_examples(cfg, split_corpora["transfer"], table)
    pairs = pairs_of(split_corpora["transfer"])
    assert len(pairs) == 20
    assert sorted(e.doc_id for e in examples) == sorted(d.id for pair in pairs.values() for d in pair.values())
    for example in examples:
        pair = pairs[example.doc_id.rsplit("-", 1)[0]]
        source, target = (pair["en"], pair["ja"]) if example.doc_id.endswith("-en") else (pair["ja"], pair["en"])
        assert example.part == "transfer" and example.kind == "translation"
        assert source.text in example.text and example.text.endswith(target.text)
        wording = example.text.replace(source.text, "").replace(target.text, "")
        assert ("English" in wording) == (source.lang == "en")  # instructions in the source's language
        assert bool(JAPANESE.search(wording)) == (source.lang == "ja")


def test_romanisation_pairs_the_romaji_with_the_japanese(split_corpora: dict[str, Any], table: TemplateTable) -> None:
    cutlet = pytest.importorskip("cutlet")
    katsu = cutlet.Cutlet()
    cfg = config(split_corpora["knowledge_path"], ["en"], transfer_corpus=str(split_corpora["transfer_path"]),
                 transfer_recipe="romanisation")
    examples = transfer_examples(cfg, split_corpora["transfer"], table)
    japanese = {d.id: d for d in split_corpora["transfer"] if d.lang == "ja"}
    assert sorted(e.doc_id for e in examples) == sorted(japanese)
    for example in examples:
        doc = japanese[example.doc_id]
        romaji = katsu.romaji(doc.text)
        assert re.search(r"[A-Za-z]{3}", romaji)
        assert romaji in example.text
        assert example.text.endswith(doc.text)
        assert example.text.index(romaji) < len(example.text) - len(doc.text)


def test_roman2en_translates_between_romaji_and_english_both_ways(
    split_corpora: dict[str, Any], table: TemplateTable
) -> None:
    """Section 6.1(2): "translation instructions between romanized Japanese and English", so both directions are
    built: romaji -> English from the Japanese document, English -> romaji from the English one."""
    cutlet = pytest.importorskip("cutlet")
    katsu = cutlet.Cutlet()
    cfg = config(split_corpora["knowledge_path"], ["en"], transfer_corpus=str(split_corpora["transfer_path"]),
                 transfer_recipe="roman2en")
    examples = transfer_examples(cfg, split_corpora["transfer"], table)
    pairs = pairs_of(split_corpora["transfer"])
    assert len(pairs) == 20
    assert sorted(e.doc_id for e in examples) == sorted(d.id for pair in pairs.values() for d in pair.values())
    for example in examples:
        pair = pairs[example.doc_id.rsplit("-", 1)[0]]
        romaji, english = katsu.romaji(pair["ja"].text), pair["en"].text
        assert example.kind == "roman2en" and example.part == "transfer"
        assert pair["ja"].text not in example.text  # the Japanese script itself is never shown
        if example.doc_id.endswith("-ja"):  # romaji -> English, instruction in Japanese
            assert example.text.endswith(english) and romaji in example.text[: -len(english)]
            assert JAPANESE.search(example.text.replace(romaji, "").replace(english, ""))
        else:  # English -> romaji, instruction in English
            assert example.text.endswith(romaji) and english in example.text[: -len(romaji)]
            assert not JAPANESE.search(example.text)


def test_roman2en_native_is_romaji_to_english_plus_romaji_to_japanese_script(table: TemplateTable) -> None:
    """Medical-Roman2En as the authors ran it, roman -> English plus roman -> native script, offered beside
    roman2en (romaji <-> English, the paper's wording in section 6.1(2)); on a real Japanese sentence through
    cutlet."""
    cutlet = pytest.importorskip("cutlet")
    japanese = Document(id="tokyo-ja", lang="ja", text="東京は日本の首都です。", metadata={"pair_id": "tokyo"})
    english = Document(id="tokyo-en", lang="en", text="Tokyo is the capital of Japan.", metadata={"pair_id": "tokyo"})
    alone = Document(id="alone-ja", lang="ja", text="富士山は日本で一番高い山です。", metadata={"pair_id": "alone"})
    docs = [japanese, english, alone]
    romaji = cutlet.Cutlet().romaji(japanese.text)
    assert "shuto desu" in romaji and not JAPANESE.search(romaji)  # 首都です in Hepburn, no Japanese script left

    cfg = config("c.jsonl", ["en"], transfer_corpus="t.jsonl", transfer_recipe="roman2en_native")
    examples = transfer_examples(cfg, docs, table)
    assert [(e.id, e.doc_id, e.kind, e.part) for e in examples] == [
        ("tokyo-ja:roman2en", "tokyo-ja", "roman2en", "transfer"),
        ("tokyo-ja:romanisation", "tokyo-ja", "romanisation", "transfer")]  # one pair; the lone document has none
    to_english, to_native = examples
    assert to_english.text.endswith(english.text) and romaji in to_english.text[: -len(english.text)]
    assert japanese.text not in to_english.text  # the Japanese script is not shown beside the English
    assert to_native.text.endswith(japanese.text) and romaji in to_native.text[: -len(japanese.text)]
    assert english.text not in to_native.text
    # roman -> native is Medical-Roman's instruction, the same template drawn for the document
    medical_roman = config("c.jsonl", ["en"], transfer_corpus="t.jsonl", transfer_recipe="romanisation")
    assert [e for e in transfer_examples(medical_roman, docs, table) if e.doc_id == "tokyo-ja"] == [to_native]

    both_ways = transfer_examples(config("c.jsonl", ["en"], transfer_corpus="t.jsonl", transfer_recipe="roman2en"),
                                  docs, table)
    assert [(e.doc_id, e.kind) for e in both_ways] == [("tokyo-ja", "roman2en"), ("tokyo-en", "roman2en")]
    assert both_ways[0] == to_english  # the same romaji -> English instruction in both variants
    assert both_ways[1].text.endswith(romaji) and english.text in both_ways[1].text


def test_documents_transfer_is_every_document_as_it_is(split_corpora: dict[str, Any], table: TemplateTable) -> None:
    cfg = config(split_corpora["knowledge_path"], ["en"], transfer_corpus=str(split_corpora["transfer_path"]),
                 transfer_recipe="documents")
    examples = transfer_examples(cfg, split_corpora["transfer"], table)
    assert [(e.doc_id, e.text) for e in examples] == [(d.id, d.text) for d in split_corpora["transfer"]]


def test_a_recipe_that_builds_nothing_is_an_error(split_corpora: dict[str, Any], table: TemplateTable) -> None:
    english = [d for d in split_corpora["transfer"] if d.lang == "en"]
    cfg = config(split_corpora["knowledge_path"], ["en"], transfer_corpus="english-only.jsonl",
                 transfer_recipe="romanisation")
    with pytest.raises(CrossknowError, match="english-only.jsonl.*romanisation"):
        transfer_examples(cfg, english, table)
    with pytest.raises(CrossknowError, match="no documents in fr"):
        knowledge_examples(config(split_corpora["knowledge_path"], ["fr"]), split_corpora["knowledge"], table)


def test_the_parts_come_in_corpus_order(split_corpora: dict[str, Any], table: TemplateTable) -> None:
    """Mixing (and budgets) happen after tokenisation, in crossknow.training.budget."""
    cfg = config(split_corpora["knowledge_path"], ["en"], transfer_corpus=str(split_corpora["transfer_path"]),
                 transfer_recipe="documents")
    parts = build_parts(cfg, split_corpora["knowledge"], split_corpora["transfer"], table)
    assert [e.doc_id for e in parts["knowledge"]] == [d.id for d in split_corpora["knowledge"] if d.lang == "en"]
    assert [e.doc_id for e in parts["transfer"]] == [d.id for d in split_corpora["transfer"]]
    no_transfer = build_parts(config(split_corpora["knowledge_path"], ["en"]), split_corpora["knowledge"], [], table)
    assert list(no_transfer) == ["knowledge"]


def test_adding_a_document_does_not_change_another_documents_instructions(
    demo_docs: list[Document], table: TemplateTable
) -> None:
    cfg = config(DEMO_DIR / "corpus.jsonl", ["en"], recipe="instruction", qa_pairs=0, seed=11)
    english = [d for d in demo_docs if d.lang == "en"]
    alone = knowledge_examples(cfg, english[:1], table)
    assert len(alone) > 1
    with_more = knowledge_examples(cfg, [english[5], *english[:1], *english[1:4]], table)
    assert [e for e in with_more if e.doc_id == english[0].id] == alone
