"""C_T built from the corpus C_K comes from, less the evaluation documents (section 6.1(2)): the paper's
Medical-Japanese, Medical-Translation and Medical-Roman corpora from one real bilingual corpus.

The corpus: the first 12 distinct English questions of the Cross-Lingual Pitfalls Japanese release
(`oriquestion`) with their Japanese translations (`transori`), one pair per question. The expected counts and
texts are read from that JSON file here, independently of crossknow's readers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from crossknow.data.corpus import Document, read_corpus
from crossknow.errors import CrossknowError, InputError
from crossknow.training.exclusion import EXCLUDED_FILE, transfer_documents
from crossknow.training.recipes import build_parts
from crossknow.training.records import TrainConfig
from crossknow.training.templates import TemplateTable

from ..conftest import SHARED_DATA as SHARED

PITFALLS_JA = SHARED / "cross-lingual-pitfalls" / "Japanese.json"
pytestmark = pytest.mark.skipif(not PITFALLS_JA.exists(), reason=f"{PITFALLS_JA} is not present")

PAIRS = 12
EVAL_PAIRS = (2, 6, 9)
"""0-based pairs the evaluation sets were generated from: 2 and 6 by Japanese items, 9 by an English one."""


@pytest.fixture(scope="module")
def real_pairs() -> list[tuple[str, str]]:
    """(English, Japanese) of the first PAIRS distinct original questions, read straight from the JSON."""
    seen: dict[str, str] = {}
    for record in json.loads(PITFALLS_JA.read_text(encoding="utf-8")):
        if len(seen) < PAIRS:
            seen.setdefault(record["oriquestion"], record["transori"])
    assert len(seen) == PAIRS
    return list(seen.items())


def _item(doc_id: str, lang: str, question: str) -> dict[str, Any]:
    """An AdaXEval release line generated from document `doc_id` (the text is immaterial here)."""
    return {"id": doc_id, "lang": lang, "question": question, "options": ["a", "b"], "answer_idx": 0,
            "metadata": {"docid": doc_id, "sentid": 0, "correct_answer": "a"}}


def _write(path: Path, records: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def files(real_pairs: list[tuple[str, str]], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The bilingual corpus file and three evaluation sets: Japanese cloze and question sets naming pairs 2 and
    6 (each document twice), and an English set naming pair 9."""
    root = tmp_path_factory.mktemp("exclusion")
    corpus = _write(root / "bilingual.jsonl", [
        {"id": f"q{n:02d}-{lang}", "lang": lang, "text": text, "metadata": {"pair_id": f"q{n:02d}"}}
        for n, (english, japanese) in enumerate(real_pairs) for lang, text in (("en", english), ("ja", japanese))])
    ja = [f"q{n:02d}-ja" for n in EVAL_PAIRS[:2]]
    sets = [_write(root / "ja_memorization.jsonl", [_item(d, "ja", "[BLANK]です。") for d in ja]),
            _write(root / "ja_generalization.jsonl", [_item(d, "ja", "何ですか？") for d in ja]),
            _write(root / "en_generalization.jsonl", [_item(f"q{EVAL_PAIRS[2]:02d}-en", "en", "What?")])]
    return {"corpus": corpus, "sets": sets}


def _parts(files: dict[str, Any], recipe: str, transfer_langs: list[str] | None) -> tuple[dict, Any]:
    """C_K (the English documents of the corpus) and C_T under `recipe`, both from the one bilingual file."""
    config = TrainConfig(model="default", corpus=files["corpus"], langs=["en"], transfer_corpus=files["corpus"],
                         transfer_recipe=recipe, transfer_langs=transfer_langs, exclude_eval=files["sets"])
    docs = read_corpus(files["corpus"])
    transfer, record = transfer_documents(config, docs, docs)
    return build_parts(config, docs, transfer, TemplateTable.load()), record


def _kept(real_pairs: list[tuple[str, str]]) -> list[tuple[int, str, str]]:
    return [(n, english, japanese) for n, (english, japanese) in enumerate(real_pairs) if n not in EVAL_PAIRS]


def test_medical_japanese_is_the_japanese_documents_less_the_evaluated_pairs(
    files: dict[str, Any], real_pairs: list[tuple[str, str]]
) -> None:
    parts, record = _parts(files, "documents", ["ja"])
    # C_K keeps every English document, the evaluated ones included: they carry the knowledge.
    assert [e.text for e in parts["knowledge"]] == [english for english, _ in real_pairs]
    kept = _kept(real_pairs)
    assert len(parts["transfer"]) == PAIRS - len(EVAL_PAIRS) == 9
    assert [(e.doc_id, e.text) for e in parts["transfer"]] == [(f"q{n:02d}-ja", ja) for n, _, ja in kept]
    # Pair 9 was evaluated in English only; its Japanese side leaves C_T too.
    assert record.excluded == ["q02-ja", "q06-ja", "q09-ja"]
    assert record.pairs == ["q02", "q06", "q09"]
    assert (record.source_documents, record.kept) == (3, 9)
    assert list(record.eval_sets.values()) == [2, 2, 1]


def test_medical_translation_is_both_directions_of_every_pair_not_evaluated(
    files: dict[str, Any], real_pairs: list[tuple[str, str]]
) -> None:
    parts, record = _parts(files, "translation", None)
    kept = _kept(real_pairs)
    assert len(parts["transfer"]) == 2 * len(kept) == 18
    assert sorted(e.doc_id for e in parts["transfer"]) == sorted(
        f"q{n:02d}-{lang}" for n, _, _ in kept for lang in ("en", "ja"))
    for example in parts["transfer"]:
        n = int(example.doc_id[1:3])
        english, japanese = real_pairs[n]
        assert english in example.text and japanese in example.text
    assert len(record.excluded) == 2 * len(EVAL_PAIRS)


def test_medical_roman_romanises_the_japanese_documents_not_evaluated(
    files: dict[str, Any], real_pairs: list[tuple[str, str]]
) -> None:
    parts, _ = _parts(files, "romanisation", ["ja"])
    kept = _kept(real_pairs)
    assert [e.doc_id for e in parts["transfer"]] == [f"q{n:02d}-ja" for n, _, _ in kept]
    for example, (_, _, japanese) in zip(parts["transfer"], kept, strict=True):
        assert japanese in example.text
        assert re.search(r"[A-Za-z]{3,} [A-Za-z]{2,}", example.text.replace(japanese, ""))  # the romaji


def test_without_exclude_eval_c_t_may_hold_the_c_k_documents(
    files: dict[str, Any], real_pairs: list[tuple[str, str]]
) -> None:
    """Without --exclude-eval a C_T may share a document or pair with C_K, as the paper's does: it is not refused."""
    config = TrainConfig(model="default", corpus=files["corpus"], langs=["en"], transfer_corpus=files["corpus"],
                         transfer_recipe="documents")
    docs = read_corpus(files["corpus"])
    transfer, record = transfer_documents(config, docs, docs)
    assert record is None and len(transfer) == 2 * PAIRS
    assert len(build_parts(config, docs, transfer, TemplateTable.load())["transfer"]) == 2 * PAIRS


def test_a_source_document_neither_corpus_holds_is_an_input_error(files: dict[str, Any], tmp_path: Path) -> None:
    stray = _write(tmp_path / "stray.jsonl", [_item("q02-ja", "ja", "x"), _item("other-7", "ja", "y")])
    config = TrainConfig(model="default", corpus=files["corpus"], langs=["en"], transfer_corpus=files["corpus"],
                         transfer_recipe="documents", exclude_eval=[stray])
    docs = read_corpus(files["corpus"])
    with pytest.raises(InputError, match="'other-7' is in neither --corpus nor --transfer-corpus") as info:
        transfer_documents(config, docs, docs)
    assert (info.value.path, info.value.line, info.value.field) == (stray, 2, "metadata.docid")


def test_exclude_eval_and_transfer_langs_need_a_transfer_corpus() -> None:
    for field, value in (("exclude_eval", ["set.jsonl"]), ("transfer_langs", ["ja"])):
        with pytest.raises(ValueError, match=f"--{field.replace('_', '-')} needs --transfer-corpus"):
            TrainConfig(model="default", corpus="c.jsonl", **{field: value})
    config = TrainConfig(model="default", corpus="c.jsonl", transfer_corpus="c.jsonl", transfer_recipe="documents",
                         transfer_langs=["fr"])
    with pytest.raises(CrossknowError, match="c.jsonl: no documents in fr"):
        transfer_documents(config, [], [Document(id="a-en", lang="en", text="A text.")])


def test_run_train_records_the_excluded_documents_and_the_sets_hashes(files: dict[str, Any], tmp_path: Path) -> None:
    """The record is written when the run directory opens, before the model loads: a gguf: spec, which training
    refuses only when it comes to load the model, stops the run right after, with no model loaded."""
    from crossknow.store.hashing import file_sha256
    from crossknow.training.trainer import run_train

    config = TrainConfig(model="gguf:absent.gguf", corpus=files["corpus"], langs=["en"],
                         transfer_corpus=files["corpus"], transfer_recipe="documents", transfer_langs=["ja"],
                         exclude_eval=files["sets"], device="cpu")
    out = tmp_path / "run"
    with pytest.raises(CrossknowError, match="training takes default or hf:"):
        run_train(config, out)
    saved = json.loads((out / EXCLUDED_FILE).read_text(encoding="utf-8"))
    assert saved["excluded"] == ["q02-ja", "q06-ja", "q09-ja"] and saved["kept"] == 9
    inputs = json.loads((out / "inputs.json").read_text(encoding="utf-8"))
    assert {Path(p).name: h for p, h in inputs.items()} == {
        Path(p).name: file_sha256(Path(p)) for p in [files["corpus"], *files["sets"]]}

    bad = _write(tmp_path / "no_docid.jsonl", [{"id": 1, "question": "q", "options": ["a"], "answer_idx": 0}])
    config = config.model_copy(update={"exclude_eval": [bad]})
    with pytest.raises(InputError, match=r"no_docid\.jsonl, line 1: field 'metadata\.docid'"):
        run_train(config, tmp_path / "bad")
    assert not (tmp_path / "bad").exists()  # nothing half-done
