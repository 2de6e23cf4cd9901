"""The corpus reader: documents, pairs, and errors that name the file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crossknow.data.corpus import Document, pair_documents, read_corpus
from crossknow.errors import InputError

MINI = Path(__file__).resolve().parents[1] / "adaxeval" / "fixtures" / "mini_corpus.jsonl"


def _write(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in records),
                    encoding="utf-8")
    return path


def _doc(doc_id: str, lang: str, pair: str | None = None, **metadata) -> dict:
    meta = dict(metadata, **({"pair_id": pair} if pair else {}))
    return {"id": doc_id, "lang": lang, "text": f"Text of {doc_id}.", "metadata": meta}


def test_reads_the_test_corpus_in_order():
    documents = read_corpus(MINI)
    assert [d.id for d in documents][:2] == ["chem-en", "chem-ja"]
    assert all(isinstance(d, Document) for d in documents)
    assert documents[0].pair_id == "chem" and documents[0].metadata["keywords"] == ["TiO2", "photocatalysis"]
    pairs = pair_documents(documents, ["en", "ja"])
    assert list(pairs.pairs) == ["chem", "med", "nlp", "geo"]
    assert pairs.pairs["med"]["ja"].id == "med-ja" and not pairs.unpaired


def test_metadata_is_optional_and_other_keys_are_kept(tmp_path):
    path = _write(tmp_path / "c.jsonl", [{"id": "a", "lang": "en", "text": "Hello there."},
                                         _doc("b", "en", "p", journal="J. Test", year=2020)])
    first, second = read_corpus(path)
    assert first.metadata == {} and first.pair_id is None
    assert second.metadata["journal"] == "J. Test"


def test_unpaired_and_other_language_documents_are_reported(tmp_path):
    path = _write(tmp_path / "c.jsonl", [
        _doc("a-en", "en", "a"), _doc("a-ja", "ja", "a"),
        _doc("b-en", "en", "b"),                      # partner missing
        _doc("c-ja", "ja"),                           # no pair id
        _doc("a-de", "de", "a"),                      # a language not asked for
    ])
    pairs = pair_documents(read_corpus(path), ["en", "ja"])
    assert list(pairs.pairs) == ["a"]
    assert [d.id for d in pairs.unpaired] == ["b-en", "c-ja"]
    assert pairs.other_langs == 1


@pytest.mark.parametrize(
    ("line3", "field", "words"),
    [
        ('{"id": "x", "lang": "en"', None, "invalid JSON"),
        ({"id": "x", "lang": "en"}, "text", "Field required"),
        ({"id": "x", "lang": "en", "text": "   "}, "text", "empty"),
        ({"id": "x", "lang": "en", "text": "T.", "metadata": {"pair_id": 7}}, "metadata.pair_id", "a string"),
        ({"id": "x", "lang": "en", "text": "T.", "metadata": {"keywords": "a, b"}}, "metadata.keywords", "list"),
        ({"id": "x", "lang": "en", "text": "T.", "extra": 1}, "extra", "Extra inputs"),
        (_doc("a-en", "en", "a"), "id", "duplicate document id"),
        (_doc("a-en2", "en", "a"), "metadata.pair_id", "a second 'en' document for pair 'a'"),
    ],
    ids=["bad-json", "no-text", "blank-text", "pair-id-type", "keywords-type", "unknown-field", "dup-id", "dup-pair"],
)
def test_bad_line_names_file_line_and_field(tmp_path, line3, field, words):
    path = _write(tmp_path / "c.jsonl", [_doc("a-en", "en", "a"), _doc("a-ja", "ja", "a"), line3])
    with pytest.raises(InputError) as caught:
        read_corpus(path)
    message = str(caught.value)
    assert str(path) in message and "line 3" in message and words in message
    if field:
        assert f"'{field}'" in message


def test_empty_corpus_is_an_error(tmp_path):
    with pytest.raises(InputError, match="the file is empty"):
        read_corpus(_write(tmp_path / "c.jsonl", []))
