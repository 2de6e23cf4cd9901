"""Token budgets of C_K and C_T (section 6.1(3)), on the demo corpus with the embedded tokenizer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from crossknow.data.corpus import Document, read_corpus
from crossknow.errors import CrossknowError
from crossknow.training.budget import budgeted_mix, mix, take_budget, tokenise
from crossknow.training.recipes import build_parts
from crossknow.training.records import PartTokens, TrainConfig, TrainingExample
from crossknow.training.templates import TemplateTable

from .tiny_run import DEMO_DIR


@pytest.fixture(scope="module")
def tokenizer(embedded_checkpoint_dir: Path) -> Any:
    """The embedded model's tokenizer (without the model)."""
    from crossknow.models.fast_tokenizer import load_tokenizer

    return load_tokenizer(str(embedded_checkpoint_dir), None)


@pytest.fixture(scope="module")
def docs() -> list[Document]:
    """The 80 documents of the demo corpus."""
    return read_corpus(DEMO_DIR / "corpus.jsonl")


def english_documents(docs: list[Document]) -> list[TrainingExample]:
    """The 40 English abstracts as C_K training texts."""
    return [TrainingExample(id=f"{d.id}:document", part="knowledge", kind="document", doc_id=d.id,
                            template_index=None, text=d.text) for d in docs if d.lang == "en"]


def full_ids(tokenizer: Any, text: str) -> list[int]:
    """The ids a text trains on, written out here: BOS (the tokenizer's special token), the text, EOS."""
    return tokenizer(text)["input_ids"] + [tokenizer.eos_token_id]


def test_a_budget_smaller_than_one_text_gives_exactly_that_many_of_its_tokens(docs, tokenizer) -> None:
    texts = tokenise(english_documents(docs), tokenizer, None)
    assert min(len(t.ids) for t in texts) > 20
    taken, counts = take_budget(texts, 20, seed=0, part="knowledge")
    assert len(taken) == 1 and len(taken[0].ids) == 20
    whole = full_ids(tokenizer, taken[0].example.text)
    assert taken[0].ids == whole[:20]  # the text's first 20 tokens, BOS first
    assert taken[0].full_tokens == len(whole)
    record = taken[0].trained()
    assert (record.tokens, record.full_tokens, record.text) == (20, len(whole), taken[0].example.text)
    total = sum(len(full_ids(tokenizer, t.example.text)) for t in texts)
    assert counts == PartTokens(texts_built=40, tokens_built=total, budget=20, texts=1, tokens=20, cut=1)


@pytest.mark.parametrize(("budget", "cut"), [(161, 0), (200, 1), (1000, 1), (2000, 1)])
def test_a_budget_is_met_exactly_with_whole_texts_and_at_most_one_cut(docs, tokenizer, budget: int, cut: int) -> None:
    """Seed 3's order begins with texts of 57, 52, 52 and 51 tokens: 161 is met by the first three whole, 200 cuts
    the fourth to 39 tokens; 1000 and 2000 end inside a text as well."""
    texts = tokenise(english_documents(docs), tokenizer, None)
    taken, counts = take_budget(texts, budget, seed=3, part="knowledge")
    assert sum(len(t.ids) for t in taken) == budget == counts.tokens
    assert len({t.example.id for t in taken}) == len(taken) == counts.texts
    wholes = [full_ids(tokenizer, t.example.text) for t in taken]
    assert all(t.ids == whole[: len(t.ids)] for t, whole in zip(taken, wholes, strict=True))
    short = [t for t, whole in zip(taken, wholes, strict=True) if len(t.ids) < len(whole)]
    assert len(short) == counts.cut == cut
    assert short == [taken[-1]] * cut  # only the text that reached the budget is cut


def test_the_sample_depends_on_the_seed_and_the_part(docs, tokenizer) -> None:
    texts = tokenise(english_documents(docs), tokenizer, None)

    def ids(seed: int, part: str) -> list[str]:
        return [t.example.id for t in take_budget(texts, 600, seed=seed, part=part)[0]]  # type: ignore[arg-type]

    assert ids(0, "knowledge") == ids(0, "knowledge")
    assert ids(1, "knowledge") != ids(0, "knowledge")
    assert ids(0, "transfer") != ids(0, "knowledge")


def test_no_budget_takes_everything_and_too_large_a_budget_is_an_error(docs, tokenizer) -> None:
    texts = tokenise(english_documents(docs), tokenizer, None)
    total = sum(len(full_ids(tokenizer, t.example.text)) for t in texts)
    taken, counts = take_budget(texts, None, seed=0, part="knowledge")
    assert taken == texts and counts.tokens == counts.tokens_built == total and counts.budget is None
    with pytest.raises(CrossknowError, match=rf"--tokens-knowledge: a budget of {total + 1:,} tokens, but the "
                       rf"knowledge corpus holds {total:,} tokens in 40 texts"):
        take_budget(texts, total + 1, seed=0, part="knowledge")


def test_cut_at_max_length_before_counting_without_packing(docs, tokenizer) -> None:
    texts = tokenise(english_documents(docs)[:3], tokenizer, 16)
    assert [len(t.ids) for t in texts] == [16, 16, 16]
    assert all(t.full_tokens > 16 for t in texts)


def test_each_corpus_gets_its_own_budget_in_one_mix(docs, tokenizer, tmp_path: Path) -> None:
    """C_K: English abstracts of facts f01-f20; C_T: the translation recipe over facts f21-f40."""
    knowledge = [d for d in docs if int(d.metadata["pair_id"][1:]) <= 20]
    transfer = [d for d in docs if int(d.metadata["pair_id"][1:]) > 20]
    config = TrainConfig(model="default", corpus="ck.jsonl", langs=["en"], transfer_corpus="ct.jsonl",
                         transfer_recipe="translation", tokens_knowledge=300, tokens_transfer=500, seed=5)
    parts = build_parts(config, knowledge, transfer, TemplateTable.load())
    mixed, counts = budgeted_mix(config, parts, tokenizer)
    assert set(counts) == {"knowledge", "transfer"}
    assert (counts["knowledge"].tokens, counts["transfer"].tokens) == (300, 500)
    assert (counts["knowledge"].texts_built, counts["transfer"].texts_built) == (20, 40)
    assert sum(len(t.ids) for t in mixed if t.example.part == "knowledge") == 300
    assert sum(len(t.ids) for t in mixed if t.example.part == "transfer") == 500
    order = [t.example.part for t in mixed]
    assert order != sorted(order)  # shuffled together, not one corpus after the other
    again, _ = budgeted_mix(config, parts, tokenizer)
    assert [(t.example.id, len(t.ids)) for t in again] == [(t.example.id, len(t.ids)) for t in mixed]


def test_the_mix_is_a_permutation_drawn_by_the_seed(docs, tokenizer) -> None:
    texts = tokenise(english_documents(docs), tokenizer, None)
    parts = [texts[:20], texts[20:]]
    first = [t.example.id for t in mix(parts, 0)]
    assert first == [t.example.id for t in mix(parts, 0)]
    assert sorted(first) == sorted(t.example.id for t in texts)
    assert first != [t.example.id for t in mix(parts, 1)]
    assert first != [t.example.id for t in texts]
