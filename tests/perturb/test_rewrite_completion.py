"""The completion form of the sentence rewrites (for base models): the prompts end where the rewrite starts, the
parser rejects each kind of junk with its reason, invalid outputs are retried and then recorded with the model's
own text, the run records the form; and, slow, the real embedded model through the whole stage."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from crossknow.data.corpus import Document
from crossknow.errors import CrossknowError
from crossknow.generation.structured import RETRY_TEMPERATURE, StructuredClient
from crossknow.perturb.completion_prompts import (
    COMPLETION_LANGUAGES,
    LANGUAGE_SCRIPTS,
    PATTERNS,
    SENTENCES,
    UNCHANGED,
    rewrite_completion,
    rewrite_parser,
    script_problem,
)
from crossknow.perturb.pipeline import run_perturb
from crossknow.perturb.prompts import LANGUAGES, language_name
from crossknow.perturb.rewrites import REWRITE_SCHEMA, RewriteRequest, run_rewrites
from crossknow.perturb.sentence_level import rewritten_sentences, segment
from crossknow.store.run_dir import ShardedTable
from tests.eclektic.scripted import Scripted

from .test_sentence_level import config_for, read_lines, write_corpus

STYLES = ("syntax", "lexicon", "semantic", "translation")
INSULIN = {"en": "Insulin lowers the blood glucose level.", "ja": "インスリンは血糖値を下げる。"}
JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


def asked_sentence(prompt: str) -> str:
    """The sentence of a completion-form rewrite prompt: the value of its next-to-last line."""
    return prompt.split("\n")[-2].split(": ", 1)[1]


@pytest.mark.parametrize("lang", COMPLETION_LANGUAGES)
@pytest.mark.parametrize("style", STYLES)
def test_the_prompt_ends_where_the_rewrite_starts(style: str, lang: str) -> None:
    target = "ja" if lang == "en" else "en"
    asked = rewrite_completion(style, INSULIN[lang] + "\n  (n = 3)", lang, target)
    source_label, target_label = asked.labels
    assert asked.prompt.stop == ("\n",)
    assert asked.prompt.text.endswith(f"\n\n{source_label}: {INSULIN[lang]} (n = 3)\n{target_label}:")  # one line
    blocks = asked.prompt.text.split("\n\n")
    assert len(blocks) == 5 and "\n" not in blocks[0]  # intro, three examples, the sentence
    for block, sentence in zip(blocks[1:4], SENTENCES[lang], strict=True):
        first, second = block.split("\n")
        assert first == f"{source_label}: {sentence}" and second.startswith(f"{target_label}: ")
        assert second.removeprefix(f"{target_label}: ") in asked.examples
    if style == "translation":
        assert asked.labels == (language_name(lang), language_name(target))
        assert [b.split("\n")[1].split(": ", 1)[1] for b in blocks[1:4]] == list(SENTENCES[target])


def test_the_examples_are_rewrites_in_their_own_language() -> None:
    assert set(LANGUAGE_SCRIPTS) == set(LANGUAGES)
    for lang, patterns in PATTERNS.items():
        assert set(patterns) == {"syntax", "lexicon", "semantic"}
        for pattern in patterns.values():
            for sentence, rewrite in zip(SENTENCES[lang], pattern.rewrites, strict=True):
                assert rewrite != sentence and script_problem(rewrite, "en" if lang == "ja" else "ja", lang) is None
    for style in ("syntax", "lexicon"):  # syntax keeps the words and changes the order; lexicon the reverse
        sentence, rewrite = SENTENCES["en"][2], PATTERNS["en"][style].rewrites[2]
        same_words = {w.lower() for w in re.findall(r"\w+", sentence)} <= {w.lower() for w in re.findall(r"\w+",
                                                                                                        rewrite)}
        assert same_words == (style == "syntax")


def test_languages_without_examples_are_refused_by_name() -> None:
    for style, lang, target in [("syntax", "de", "en"), ("translation", "en", "ko"), ("semantic", "zh", "ja")]:
        with pytest.raises(CrossknowError, match=r"examples in English \(en\) and Japanese \(ja\) only"):
            rewrite_completion(style, "Ein Satz.", lang, target)
    rewrite_completion("syntax", INSULIN["en"], "en", "de")  # only translation asks for its target


def test_the_parser_rejects_each_kind_of_junk_with_its_reason() -> None:
    sentence = INSULIN["en"]
    asked = rewrite_completion("syntax", sentence, "en", "ja")
    parse = rewrite_parser(asked, "syntax", sentence, "en", "ja")
    reason = {text: (parse(text)[1] or "").partition(":")[0] for text in [
        "", "  \n The blood glucose level is lowered by insulin.", "Restructured: The level is lowered.",
        "Sentence: Insulin lowers it.", " sentence : x",
        " In the small intestine, starch is broken down by the enzyme.",
        " The enzyme breaks down starch in the small intestine.", f" {sentence}",
    ]}
    assert list(reason.values()) == ["empty", "empty", "prompt_echo", "prompt_echo", "", "prompt_echo",
                                     "prompt_echo", UNCHANGED]
    assert parse(" The blood glucose level is lowered by insulin.\nSentence: more") == (
        "The blood glucose level is lowered by insulin.", None)  # the first line, stripped
    assert parse(" sentence : x") == ("sentence : x", None)  # labels are matched as written


def test_a_translation_in_the_wrong_script_is_rejected() -> None:
    into_ja = rewrite_parser(rewrite_completion("translation", INSULIN["en"], "en", "ja"), "translation",
                             INSULIN["en"], "en", "ja")
    assert into_ja(" Insulin reduces blood sugar.")[1].startswith("wrong_script: the Japanese translation holds no ")
    assert into_ja(" Japanese: インスリン")[1].startswith("prompt_echo:")
    mixed = "インスリンはblood glucoseを下げる。"
    assert into_ja(f" {mixed}") == (mixed, None)  # Latin terms may stay
    assert into_ja(" DNAポリメラーゼ") == ("DNAポリメラーゼ", None)
    into_en = rewrite_parser(rewrite_completion("translation", INSULIN["ja"], "ja", "en"), "translation",
                             INSULIN["ja"], "ja", "en")
    assert into_en(" インスリン")[1].startswith("wrong_script: the English translation holds no latin letter")
    assert into_en(" Insulin lowers 血糖値.")[1] == ("wrong_script: the English translation still holds kanji "
                                                   "letters: 'Insulin lowers 血糖値.'")
    assert into_en(" Insulin lowers the blood sugar level.") == ("Insulin lowers the blood sugar level.", None)
    assert into_en(f" {INSULIN['ja']}")[1] == UNCHANGED
    # the other patterns keep the sentence's language: no script rule
    syntax = rewrite_parser(rewrite_completion("syntax", INSULIN["ja"], "ja", "en"), "syntax", INSULIN["ja"], "ja",
                            "en")
    assert syntax(" Insulin lowers it.") == ("Insulin lowers it.", None)


def base_model_reply(prompt: str, seed: int) -> str:
    """A scripted base model: the first attempt (seed 0) echoes the prompt's last example, later ones write a valid
    rewrite of the asked sentence (a tag and the sentence; in Japanese for a Japanese translation)."""
    if seed == 0:
        return " " + prompt.split("\n\n")[-2].split("\n")[1].split(": ", 1)[1] + "\nmore"
    sentence = asked_sentence(prompt)
    return f" 訳 {sentence}" if prompt.endswith("\nJapanese:") else f" [{seed}] {sentence}\n"


@pytest.mark.model  # the embedded checkpoint: its tokenizer or its weights
def test_invalid_outputs_are_retried_then_valid(tmp_path: Path, demo_documents: dict[str, Document]) -> None:
    doc = demo_documents["f01-en"]
    corpus = write_corpus(tmp_path / "corpus.jsonl", [doc])
    base = Scripted(base_model_reply, prompt_format="completion")
    config = config_for(corpus, tmp_path, lang="en", cross_lang="ja", methods=["syntax", "translation"],
                        sentence_x=[100])
    summary = run_perturb(config, tmp_path / "run", make_generator=lambda spec, o: base)
    assert (summary.rewrite_model, summary.rewrite_prompt_format) == ("scripted:m", "completion")
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["rewrite_prompt_format"] == "completion"
    sentences = segment(doc.text, "en").sentences
    assert len(base.requests) == 2 * 2 * len(sentences)  # each asked twice: the echo, then the rewrite
    first, retry = base.requests[0], base.requests[2]  # shards of 2 requests (config_for), each retried in turn
    assert first.messages == ()  # a completion request: a prompt and no chat messages
    assert (first.temperature, first.stop, first.max_tokens) == (0.0, ("\n",), 256)  # 512 asked, capped
    assert (retry.temperature, retry.seed, retry.prompt) == (RETRY_TEMPERATURE, 1, first.prompt)
    assert first.prompt.startswith("Sentences rewritten with another word order or voice")
    variants = {v["method"]: v["text"] for v in read_lines(tmp_path / "run" / "variants.jsonl")}
    syntax, translation = doc.text, doc.text
    for sentence in sentences:
        syntax, translation = syntax.replace(sentence, f"[1] {sentence}"), translation.replace(sentence,
                                                                                             f"訳 {sentence}")
    assert (variants["syntax"], variants["translation"]) == (syntax, translation)
    rows = ShardedTable(tmp_path / "run" / "stages" / "rewrites").read(REWRITE_SCHEMA).to_pylist()
    assert {(row["attempts"], row["error"]) for row in rows} == {(2, None)}


@pytest.mark.model  # the embedded checkpoint: its tokenizer or its weights
def test_outputs_still_invalid_are_recorded_with_the_models_text(tmp_path: Path,
                                                                demo_documents: dict[str, Document]) -> None:
    doc = demo_documents["f01-ja"]
    corpus = write_corpus(tmp_path / "corpus.jsonl", [doc])
    first, second, _ = segment(doc.text, "ja").sentences

    def reply(prompt: str, seed: int) -> str:
        sentence = asked_sentence(prompt)
        if sentence == first:
            return " 語順を変えた文: そのまま\n"  # the label, every attempt
        if sentence == second:
            return f" {sentence}"  # unchanged, every attempt
        return f" {sentence[1:]}{sentence[0]}"

    base = Scripted(reply, prompt_format="completion")
    config = config_for(corpus, tmp_path, methods=["syntax"], sentence_x=[34, 100], max_attempts=3)
    summary = run_perturb(config, tmp_path / "run", make_generator=lambda spec, o: base)
    rows = {row["sentence"]: row for row in ShardedTable(tmp_path / "run" / "stages" / "rewrites")
            .read(REWRITE_SCHEMA).to_pylist()}
    assert rows[first]["error"].startswith("prompt_echo: the output starts with a label of the prompt")
    assert rows[first]["raw_output"] == " 語順を変えた文: そのまま\n" and rows[first]["attempts"] == 3
    assert (rows[second]["error"], rows[second]["raw_output"], rows[second]["attempts"]) == (UNCHANGED,
                                                                                          f" {second}", 3)
    assert [r.temperature for r in base.requests if asked_sentence(r.prompt) == first] == [0.0, 0.7, 0.7]
    # syntax-34 rewrites one of the 3 sentences, drawn by the seed: the second (seed 0); syntax-100 rewrites all
    # three and fails at the first. Each failure names its sentence and keeps that sentence's last raw output.
    assert rewritten_sentences(doc.id, 3, 34, config.seed) == [1]
    failures = [(f["x"], f["reason"].split(":")[0], f["raw_output"])
                for f in read_lines(tmp_path / "run" / "failures.jsonl")]
    assert failures == [(34, "sentence 2 has no valid syntax rewrite", f" {second}"),
                        (100, "sentence 1 has no valid syntax rewrite", " 語順を変えた文: そのまま\n")]
    assert summary.failures == 2


@pytest.mark.model  # the embedded checkpoint: its tokenizer or its weights
def test_the_chat_form_is_recorded_and_unchanged(tmp_path: Path, demo_documents: dict[str, Document]) -> None:
    corpus = write_corpus(tmp_path / "corpus.jsonl", [demo_documents["f02-ja"]])
    chat = Scripted(lambda user, seed: json.dumps({"sentence": "[S]" + re.search(r"^Sentence: (.*)$", user,
                                                                                  re.M).group(1)}))
    summary = run_perturb(config_for(corpus, tmp_path, methods=["syntax"], sentence_x=[100]), tmp_path / "run",
                          make_generator=lambda spec, o: chat)
    assert (summary.rewrite_model, summary.rewrite_prompt_format) == ("scripted:m", "chat")
    assert all(r.prompt is None and r.messages and r.json_schema and r.max_tokens == 512 for r in chat.requests)


@pytest.mark.model  # the embedded checkpoint: its tokenizer or its weights
def test_a_base_model_without_examples_in_the_language_stops_before_the_run(
        tmp_path: Path, demo_documents: dict[str, Document]) -> None:
    corpus = write_corpus(tmp_path / "corpus.jsonl", [demo_documents["f01-en"]])
    base = Scripted(base_model_reply, prompt_format="completion")
    config = config_for(corpus, tmp_path, lang="en", cross_lang="de", methods=["translation"])
    with pytest.raises(CrossknowError, match=r"not in German \(de\).*#chat"):
        run_perturb(config, tmp_path / "run", make_generator=lambda spec, o: base)
    assert base.requests == [] and not (tmp_path / "run").exists()
    stage = ShardedTable(tmp_path / "stage")
    client = StructuredClient(base)
    with pytest.raises(CrossknowError, match="German"):
        run_rewrites([RewriteRequest("d", 0, "translation", "A sentence.", "en", "de")], client, stage, 4)
    assert base.requests == []


@pytest.mark.slow
def test_the_embedded_base_model_rewrites_through_the_completion_form(embedded_generator, tmp_path: Path) -> None:
    """Two English and two Japanese sentences, each rewritten (syntax) and translated by the real embedded Gemma 3
    270M: every output is a valid one-line rewrite that differs from its sentence (a Japanese translation in Japanese
    script) or is recorded invalid with the model's text; at least one is valid."""
    assert embedded_generator.prompt_format == "completion"
    sentences = {"en": ["Aspirin reduces fever and pain.", "The river floods the valley every spring."],
                 "ja": ["アスピリンは熱と痛みを和らげる。", "その川は毎年春に谷を水浸しにする。"]}
    requests = [RewriteRequest(f"s-{lang}", k, style, sentence, lang, "ja" if lang == "en" else "en")
                for lang, pair in sentences.items() for k, sentence in enumerate(pair)
                for style in ("syntax", "translation")]
    client = StructuredClient(embedded_generator, None, max_attempts=2, max_tokens=48)
    results = run_rewrites(requests, client, ShardedTable(tmp_path / "rewrites"), batch_size=8)
    assert len(results) == len(requests)
    print()
    for request in requests:
        result = results[(request.source_id, request.index, request.style)]
        print(f"{request.style:<11} {request.lang} {request.sentence!r} -> {result.rewrite!r} "
              f"(error: {result.error}; raw: {result.raw_output!r})")
        if result.rewrite is None:
            assert result.error and result.raw_output is not None
            continue
        assert "\n" not in result.rewrite and result.rewrite == result.rewrite.strip() and result.rewrite
        assert result.rewrite != request.sentence
        if request.style == "translation" and request.target_lang == "ja":
            assert JAPANESE.search(result.rewrite)
    assert any(r.rewrite is not None for r in results.values())
