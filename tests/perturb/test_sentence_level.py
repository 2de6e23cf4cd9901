"""partial-a on constructed and real texts, the choice of sentences to rewrite, and the rewrite stage of
`run_perturb` against a scripted generator (the real llama.cpp chat server: test_rewrite_server.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from crossknow.data.corpus import Document
from crossknow.data.sequence_variants import SequenceVariant
from crossknow.errors import CrossknowError
from crossknow.perturb.pipeline import run_perturb
from crossknow.perturb.records import PerturbationFailure, PerturbConfig
from crossknow.perturb.sampling import Source
from crossknow.perturb.sentence_level import partial_variants, rewritten_sentences, segment
from crossknow.perturb.tokenizers import ModelTokens
from tests.eclektic.scripted import Scripted

from .test_edits import plain_levenshtein

FIVE = ("Insulin lowers blood sugar.  Glucagon raises it again!\nBoth come from the pancreas? "
        "Their balance keeps levels steady. Diabetes breaks that balance.")


def test_sentences_are_found_with_the_text_between_them() -> None:
    segmented = segment(FIVE, "en")
    assert segmented.sentences == ["Insulin lowers blood sugar.", "Glucagon raises it again!",
                                   "Both come from the pancreas?", "Their balance keeps levels steady.",
                                   "Diabetes breaks that balance."]
    assert segmented.gaps == ["", "  ", "\n", " ", " ", ""]
    assert segmented.text() == FIVE
    assert segmented.text({1: "X."}) == FIVE.replace("Glucagon raises it again!", "X.")


def test_a_hard_wrapped_sentence_falls_back_to_joined_sentences() -> None:
    segmented = segment("Insulin lowers\nblood sugar. Glucagon raises it.", "en")
    assert segmented.gaps is None
    assert segmented.text({1: "X."}) == "Insulin lowers blood sugar. X."


def test_partial_groups_whole_sentences_in_four(model_tokens: ModelTokens) -> None:
    source = Source(Document(id="five", lang="en", text=FIVE), model_tokens)
    variants = list(partial_variants(source, segment(FIVE, "en"), "sentences", seed=0))
    assert [v.text for v in variants] == [  # 5 sentences: 2, 1, 1, 1
        "Insulin lowers blood sugar.  Glucagon raises it again!", "Both come from the pancreas?",
        "Their balance keeps levels steady.", "Diabetes breaks that balance.",
    ]
    for a, variant in enumerate(variants, start=1):
        assert (variant.id, variant.a, variant.level, variant.token_ids) == (f"five:partial-{a}", a, "sentence", None)
        ids = model_tokens.sequence_ids(variant.text)
        assert variant.edit_distance == plain_levenshtein(source.ids, ids)


def test_partial_by_tokens_cuts_the_ids_in_four(ja_source: Source) -> None:
    variants = list(partial_variants(ja_source, None, "tokens", seed=0))
    n = len(ja_source.ids)
    assert [len(v.token_ids) for v in variants] == [19, 19, 19, 19]  # 76 tokens
    assert sum((v.token_ids for v in variants), []) == ja_source.ids
    for variant in variants:
        assert variant.text == ja_source.model.tokenizer.decode(variant.token_ids)
        assert variant.edit_distance == plain_levenshtein(ja_source.ids, variant.token_ids) == n - 19


def test_partial_of_fewer_than_four_sentences_fails(ja_source: Source) -> None:
    lines = list(partial_variants(ja_source, segment(ja_source.doc.text, "ja"), "sentences", seed=0))
    assert [(f.a, f.reason) for f in lines] == [(a, "3 sentences: fewer than the 4 segments") for a in range(1, 5)]


def test_rewritten_sentences() -> None:
    assert rewritten_sentences("d", 3, 10, seed=0) is None  # 0.3 sentences
    assert len(rewritten_sentences("d", 5, 40, seed=0)) == 2
    assert rewritten_sentences("d", 5, 100, seed=0) == [0, 1, 2, 3, 4]
    assert rewritten_sentences("d", 9, 40, seed=5) == rewritten_sentences("d", 9, 40, seed=5)
    draws = {tuple(rewritten_sentences("d", 9, 40, seed=s)) for s in range(10)}
    assert len(draws) > 1


def write_corpus(path: Path, documents: list[Document]) -> str:
    path.write_text("".join(doc.model_dump_json() + "\n" for doc in documents), encoding="utf-8")
    return str(path)


def sentence_of(user: str) -> str:
    return re.search(r"^Sentence: (.*)$", user, re.M).group(1)


def tagging_reply(user: str, seed: int) -> str | None:
    """Tags the sentence with its pattern: [T] for a translation, [S] for a syntax rewrite."""
    tag = "[T]" if user.startswith("Translate") else "[S]"
    return json.dumps({"sentence": tag + sentence_of(user)}, ensure_ascii=False)


def config_for(corpus: str, tmp_path: Path, **changes) -> PerturbConfig:
    """Rewrites by a scripted generator (its openai: spec never reaches a server), cached in `tmp_path`."""
    settings = {"methods": ["syntax", "translation"], "sentence_x": [40, 100], "batch_size": 2}
    return PerturbConfig(corpus=corpus, generator="openai:scripted", base_url="http://127.0.0.1:9/v1",
                         cache=str(tmp_path / "requests.sqlite"), **(settings | changes))


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_rewrites_replace_the_chosen_sentences(tmp_path: Path, demo_documents: dict[str, Document],
                                              model_tokens: ModelTokens) -> None:
    docs = [demo_documents["f01-ja"], demo_documents["f02-ja"]]
    corpus = write_corpus(tmp_path / "corpus.jsonl", docs)
    scripted = Scripted(tagging_reply)
    summary = run_perturb(config_for(corpus, tmp_path), tmp_path / "run", make_generator=lambda spec, o: scripted)
    variants = {v["id"]: SequenceVariant.model_validate(v) for v in read_lines(tmp_path / "run" / "variants.jsonl")}
    assert summary.failures == 0 and summary.variants == len(variants) == 2 * (1 + 2 * 2)
    for doc in docs:
        sentences = segment(doc.text, "ja").sentences
        assert len(sentences) == 3
        syntax40, translation40 = variants[f"{doc.id}:syntax-40"], variants[f"{doc.id}:translation-40"]
        changed = [s for s in sentences if "[S]" + s in syntax40.text]
        assert len(changed) == 1  # round-half-up(40% of 3) = 1
        assert translation40.text == syntax40.text.replace("[S]", "[T]")  # the same sentence for both patterns
        assert syntax40.text.replace("[S]", "") == doc.text
        assert variants[f"{doc.id}:syntax-100"].text == "".join("[S]" + s for s in sentences)
        for variant in (syntax40, translation40):
            expected = plain_levenshtein(model_tokens.sequence_ids(doc.text), model_tokens.sequence_ids(variant.text))
            assert variant.edit_distance == expected > 0
    # 2 docs x (1 + 3) sentences x 2 patterns, each asked once (the 40% sentence again at 100% comes from the stage)
    assert len(scripted.requests) == 2 * 3 * 2
    again = run_perturb(config_for(corpus, tmp_path), tmp_path / "run", make_generator=lambda spec, o: scripted)
    assert len(scripted.requests) == 12 and again.rewrite_calls == 0  # resumed: nothing asked again


@pytest.mark.model  # the embedded checkpoint: its tokenizer or its weights
def test_invalid_rewrites_are_failures_never_variants(tmp_path: Path, demo_documents: dict[str, Document]) -> None:
    doc = demo_documents["f01-ja"]
    corpus = write_corpus(tmp_path / "corpus.jsonl", [doc])
    first, second, third = segment(doc.text, "ja").sentences

    def reply(user: str, seed: int) -> str:
        sentence = sentence_of(user)
        if sentence == first:
            return "I cannot do that."  # never JSON
        if sentence == second:
            return json.dumps({"sentence": sentence}, ensure_ascii=False)  # unchanged
        return tagging_reply(user, seed)

    config = config_for(corpus, tmp_path, methods=["syntax"], sentence_x=[100])
    summary = run_perturb(config, tmp_path / "run", make_generator=lambda spec, o: Scripted(reply))
    assert summary.variants == 1  # the original only
    [failure] = [PerturbationFailure.model_validate(f) for f in read_lines(tmp_path / "run" / "failures.jsonl")]
    assert failure.method == "syntax" and failure.x == 100
    assert failure.reason.startswith("sentence 1 has no valid syntax rewrite: not valid JSON")
    assert failure.raw_output == "I cannot do that."
    config = config_for(corpus, tmp_path, methods=["syntax"], sentence_x=[100], seed=1)
    run_perturb(config, tmp_path / "run2", make_generator=lambda spec, o: Scripted(
        lambda user, seed: reply(user, seed) if sentence_of(user) != first else tagging_reply(user, seed)))
    [failure] = read_lines(tmp_path / "run2" / "failures.jsonl")
    assert failure["reason"] == "sentence 2 has no valid syntax rewrite: the rewrite repeats the sentence unchanged"
    assert third  # three sentences, the third rewritten validly in both runs


@pytest.mark.model  # the embedded checkpoint: its tokenizer or its weights
def test_a_transport_failure_stops_before_the_variants_and_resumes(tmp_path: Path,
                                                                   demo_documents: dict[str, Document]) -> None:
    doc = demo_documents["f02-ja"]
    corpus = write_corpus(tmp_path / "corpus.jsonl", [doc])
    first = segment(doc.text, "ja").sentences[0]
    down = Scripted(lambda user, seed: None if sentence_of(user) == first else tagging_reply(user, seed))
    config = config_for(corpus, tmp_path, methods=["translation"], sentence_x=[100], max_attempts=1)
    with pytest.raises(CrossknowError, match="1 rewrite requests failed in transport"):
        run_perturb(config, tmp_path / "run", make_generator=lambda spec, o: down)
    assert not (tmp_path / "run" / "variants.jsonl").exists()
    up = Scripted(tagging_reply)
    summary = run_perturb(config, tmp_path / "run", make_generator=lambda spec, o: up)
    assert [sentence_of(r.messages[-1].content) for r in up.requests] == [first]  # only the missing one
    assert summary.variants == 2 and summary.failures == 0
