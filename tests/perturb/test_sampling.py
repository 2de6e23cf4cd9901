"""The sample of training sequences: partial-a by sentences draws only documents of 4 sentences or more, as the
authors' code asserts, on a corpus made of the demo's real abstracts (3 sentences each) and pairs of them joined
(6 sentences); and the default reorder windows, which hold the authors' window 3."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossknow.data.corpus import Document, read_corpus
from crossknow.data.sentences import split_sentences
from crossknow.errors import InputError
from crossknow.perturb.pipeline import run_perturb
from crossknow.perturb.records import PerturbConfig
from crossknow.perturb.sampling import sample_documents


@pytest.fixture
def mixed_corpus(demo_documents: dict[str, Document], tmp_path: Path) -> Path:
    """8 Japanese documents: s1..s4 one demo abstract each (3 sentences), l1..l4 two abstracts joined (6)."""
    abstracts = [demo_documents[f"f{k:02d}-ja"].text for k in range(1, 13)]
    docs = [Document(id=f"s{k}", lang="ja", text=abstracts[k - 1]) for k in range(1, 5)]
    docs += [Document(id=f"l{k}", lang="ja", text=abstracts[2 + 2 * k] + abstracts[3 + 2 * k]) for k in range(1, 5)]
    docs.sort(key=lambda doc: doc.id[1] + doc.id[0])  # s1, l1, s2, l2, ...: long and short interleaved
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(doc.model_dump_json() + "\n" for doc in docs), encoding="utf-8")
    assert {doc.id: len(split_sentences(doc.text, "ja")) for doc in read_corpus(path)} == {
        "s1": 3, "l1": 6, "s2": 3, "l2": 6, "s3": 3, "l3": 6, "s4": 3, "l4": 6}
    return path


def test_a_minimum_of_sentences_draws_only_documents_that_have_it(mixed_corpus: Path) -> None:
    for seed in range(5):
        drawn = [doc.id for doc in sample_documents(mixed_corpus, "ja", 3, seed, min_sentences=4)]
        assert len(drawn) == 3 and all(name.startswith("l") for name in drawn), drawn
        assert drawn == sorted(drawn, key=lambda name: name[1])  # corpus order
        assert drawn == [doc.id for doc in sample_documents(mixed_corpus, "ja", 3, seed, min_sentences=4)]
    # more than there are: all four long ones; without a minimum, the short ones are drawn too
    assert [doc.id for doc in sample_documents(mixed_corpus, "ja", 10, 0, min_sentences=4)] == ["l1", "l2", "l3", "l4"]
    assert len(sample_documents(mixed_corpus, "ja", 10, 0)) == 8
    with pytest.raises(InputError, match="has 7 sentences or more"):
        sample_documents(mixed_corpus, "ja", 3, 0, min_sentences=7)


@pytest.mark.model  # the embedded checkpoint: its tokenizer or its weights
def test_partial_a_by_sentences_samples_documents_of_four_sentences_or_more(mixed_corpus: Path,
                                                                            tmp_path: Path) -> None:
    config = PerturbConfig(corpus=str(mixed_corpus), lang="ja", n=4, methods=["partial"], seed=1)
    summary = run_perturb(config, tmp_path / "run")
    sources = {line.split('"source_id":"')[1].split('"')[0]
               for line in (tmp_path / "run/variants.jsonl").read_text(encoding="utf-8").splitlines()}
    assert sources == {"l1", "l2", "l3", "l4"}
    assert summary.failures == 0 and summary.variants == 4 * (1 + 4)  # each: the original and partial-1..4
    assert config.min_sentences == summary.min_sentences == 4
    # partial-a by tokens (crossknow's option for short documents) and no partial: any document
    assert PerturbConfig(corpus="c", methods=["partial"], partial_unit="tokens").min_sentences == 0
    assert PerturbConfig(corpus="c", methods=["mask"]).min_sentences == 0


def test_the_default_reorder_windows_hold_the_authors_window_3() -> None:
    # the paper's Y = 2^0..2^4 (section 5.1.1) and 3, the window of the authors' reorder-X@3 (Fig. 6: reorder-8@3)
    assert PerturbConfig(corpus="c").y == [1, 2, 3, 4, 8, 16]
