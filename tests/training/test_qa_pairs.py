"""The instruction recipe's question-answer half (Appendix A.4.1(2)): a scripted generator for the logic, and one
training run end to end against the real llama.cpp chat server. Only pairs that pass the rules of qa_checks are kept,
and each kept pair is a training text of its own."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from rich.console import Console

from crossknow.cli.train_cmd import stage_table
from crossknow.data.corpus import Document
from crossknow.errors import CrossknowError
from crossknow.generation.structured import StructuredClient, parse_structured
from crossknow.models.generator import GenerateRequest, GenerateResult
from crossknow.store.request_cache import RequestCache
from crossknow.training.qa_checks import screen_pairs
from crossknow.training.qa_pairs import (
    FIELD_MAX_TOKENS,
    QAPairs,
    ask_qa_pairs,
    qa_client,
    qa_examples,
    qa_prompt,
    qa_spec,
    qa_texts,
    summarise,
)
from crossknow.training.records import QAPair, QARecord, RejectedPair, TrainConfig
from crossknow.training.trainer import QA_FILE, run_train

from .tiny_run import DEMO_DIR

ENGLISH = Document(id="d-en", lang="en", text="The Helvane ledger was begun in 1894 by Ostrid Kael.")
JAPANESE = Document(id="d-ja", lang="ja", text="ヘルヴェイン台帳は1894年にオストリッド・カエルが始めた。")
SHORT = Document(id="short", lang="en", text="Marsh fever is treated with willow bark.")
BROKEN = Document(id="broken", lang="en", text="This document only ever gets malformed answers.")


def good_pair(i: int, lang: str) -> dict[str, str]:
    """The i-th of a document's pairs that pass every rule: self-contained, answered in a sentence."""
    if lang == "ja":
        return {"question": f"ヘルヴェイン台帳についての事実{i}は何か。",
                "answer": f"事実{i}として、オストリッド・カエルがヘルヴェイン台帳を1894年に始めた。"}
    return {"question": f"What is fact number {i} about the Helvane ledger?",
            "answer": f"Fact number {i} is that Ostrid Kael began the Helvane ledger in 1894."}


def pairs_json(count: int, lang: str = "en") -> str:
    """A valid answer with `count` numbered pairs that pass every rule."""
    return json.dumps({"pairs": [good_pair(i, lang) for i in range(1, count + 1)]}, ensure_ascii=False)


class ScriptedGenerator:
    """Answers each prompt by the document it holds: seven pairs, two pairs, or malformed output every time."""

    name = "scripted"
    model_id = "scripted-qa"

    def __init__(self) -> None:
        self.requests: list[GenerateRequest] = []

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        """One scripted answer per request."""
        self.requests.extend(requests)
        answers = []
        for request in requests:
            prompt = request.messages[-1].content
            if BROKEN.text in prompt:
                text = '{"pairs": [{"question": "unfinished'
            elif SHORT.text in prompt:
                text = pairs_json(2)
            else:
                text = pairs_json(7, "ja" if JAPANESE.text in prompt else "en")
            answers.append(GenerateResult(text=text, backend=self.name, model_id=self.model_id))
        return answers


def test_pairs_are_kept_up_to_n_partial_ones_kept_and_invalid_ones_recorded(tmp_path: Path) -> None:
    generator = ScriptedGenerator()
    cache = RequestCache(tmp_path / "cache.sqlite")
    client = StructuredClient(generator, cache, max_attempts=3)
    docs = [ENGLISH, SHORT, BROKEN, JAPANESE]
    records = ask_qa_pairs(client, docs, 5)
    assert [r.doc_id for r in records] == ["d-en", "short", "broken", "d-ja"]
    assert [len(r.pairs) for r in records] == [5, 2, 0, 5]  # seven answered, the first five kept
    assert [p.question for p in records[0].pairs] == [good_pair(i, "en")["question"] for i in range(1, 6)]
    assert records[2].error and records[2].error.startswith("not valid JSON") and records[2].attempts == 3
    assert all(r.error is None and r.attempts == 1 for r in records if r.doc_id != "broken")
    assert len(generator.requests) == 3 + 3  # one call each, and two more for the malformed one

    summary = summarise(records, 5, client)
    assert (summary.documents, summary.complete, summary.partial, summary.invalid) == (4, 2, 1, 1)
    assert (summary.generator, summary.calls_this_run, summary.cached_calls_this_run) == ("scripted:scripted-qa", 6, 0)

    # Asked again: every answer from the request cache, the same records, no call sent.
    again_client = StructuredClient(generator, cache, max_attempts=3)
    again = ask_qa_pairs(again_client, docs, 5)
    assert [(r.doc_id, r.pairs, r.error) for r in again] == [(r.doc_id, r.pairs, r.error) for r in records]
    assert all(r.cached for r in again)
    assert (again_client.meter.calls, len(generator.requests)) == (0, 6)
    cache.close()


class ReadingComprehensionGenerator:
    """Answers with reading-comprehension pairs, which the rules reject: `script` maps a document's text to the
    JSON it gets, every attempt."""

    name = "scripted"
    model_id = "reading-comprehension"

    def __init__(self, script: dict[str, str]) -> None:
        self.script = script
        self.requests: list[GenerateRequest] = []

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        """The scripted JSON of the document each prompt holds."""
        self.requests.extend(requests)
        return [GenerateResult(text=next(v for k, v in self.script.items() if k in r.messages[-1].content),
                               backend=self.name, model_id=self.model_id) for r in requests]


def test_pairs_that_fail_a_rule_are_recorded_with_the_reason_and_never_kept() -> None:
    """Only self-contained knowledge questions with substantive answers are kept. A pair that refers to its
    document, or answers with a few words copied from it, is rejected and recorded; an output whose pairs all fail
    is invalid like malformed JSON: retried, then recorded."""
    mixed = {"pairs": [
        {"question": "Who began the ledger mentioned in the document?", "answer": "Ostrid Kael began it in 1894."},
        {"question": "Who began the Helvane ledger?", "answer": "Ostrid Kael"},
        {"question": "Who began the Helvane ledger, and when?",
         "answer": "Ostrid Kael began the Helvane ledger in 1894."},
        {"question": "When was the ledger begun?", "answer": "begun in 1894 by Ostrid Kael"},
    ]}
    only_bad = {"pairs": [{"question": "What did this study treat?", "answer": "Marsh fever is treated with bark."},
                          {"question": "What is marsh fever treated with?", "answer": "willow bark"}]}
    generator = ReadingComprehensionGenerator({ENGLISH.text: json.dumps(mixed), SHORT.text: json.dumps(only_bad)})
    client = StructuredClient(generator, None, max_attempts=3)
    kept, invalid = ask_qa_pairs(client, [ENGLISH, SHORT], 5)

    assert [p.question for p in kept.pairs] == ["Who began the Helvane ledger, and when?"]
    assert [(r.question, r.answer, r.rule) for r in kept.rejected] == [
        ("Who began the ledger mentioned in the document?", "Ostrid Kael began it in 1894.", "refers_to_document"),
        ("Who began the Helvane ledger?", "Ostrid Kael", "short_answer"),
        ("When was the ledger begun?", "begun in 1894 by Ostrid Kael", "copied_answer")]
    assert "'the document'" in kept.rejected[0].reason and "2 words" in kept.rejected[1].reason
    assert "6 words" in kept.rejected[2].reason
    assert kept.error is None and kept.attempts == 1

    assert invalid.pairs == [] and invalid.rejected == [] and invalid.attempts == 3  # retried, then recorded
    assert invalid.error is not None and invalid.error.startswith("every pair failed a rule")
    assert "refers_to_document" in invalid.error and "short_answer" in invalid.error
    summary = summarise([kept, invalid], 5, client)
    assert (summary.partial, summary.invalid) == (1, 1)
    assert summary.rejected == {"copied_answer": 1, "refers_to_document": 1, "short_answer": 1}
    assert examples_of([kept, invalid]) == ["Question: Who began the Helvane ledger, and when?\n"
                                            "Answer: Ostrid Kael began the Helvane ledger in 1894."]


def examples_of(records: list[QARecord]) -> list[str]:
    """The training texts of `records`."""
    return [e.text for e in qa_examples(records)]


class FewShotBaseModel:
    """A base model under few-shot prompts: answers by the last line of the prompt and the document it holds."""

    name = "scripted"
    model_id = "base-model"
    prompt_format = "completion"  # a base model: the fields form, by completion prompts

    def __init__(self, questions: dict[str, list[str]], answers: dict[str, str]) -> None:
        self.questions = questions
        self.answers = answers
        self.prompts: list[str] = []
        self.stops: set[tuple[str, ...]] = set()

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        """The next scripted question (by the questions already asked in the prompt) or the scripted answer."""
        results = []
        for request in requests:
            assert request.prompt is not None and not request.messages  # plain text the model continues
            prompt = request.prompt
            self.prompts.append(prompt)
            self.stops.add(request.stop)
            last_block = prompt.rsplit("\n\n", 1)[-1]
            if prompt.endswith("Question:"):
                asked = last_block.count("\nQuestion: ")
                text = next(v for k, v in self.questions.items() if k in last_block)[asked]
            else:
                question = last_block.splitlines()[-2].removeprefix("Question: ")
                text = self.answers[question]
            results.append(GenerateResult(text=text, backend=self.name, model_id=self.model_id))
        return results


def test_a_base_model_is_asked_one_field_per_call_and_code_makes_the_pairs() -> None:
    """The fields form: a question, then its answer, per round; a rejected answer's question is shown as asked so
    it is not asked again; a document stops at its first question that stays invalid (recorded)."""
    base = FewShotBaseModel(
        questions={ENGLISH.text: [" Who began the Helvane ledger?\nQuestion: more", "Question: When was the Helvane "
                                  "ledger begun?", "Who began the Helvane ledger?"],
                   SHORT.text: ["What did this study find?"]},
        answers={"Who began the Helvane ledger?": "Ostrid Kael began the Helvane ledger in 1894.\nQuestion: x",
                 "When was the Helvane ledger begun?": "1894"})
    client = StructuredClient(base, None, max_attempts=2)
    ledger, marsh = ask_qa_pairs(client, [ENGLISH, SHORT], 5)

    assert ledger.pairs == [QAPair(question="Who began the Helvane ledger?",
                                   answer="Ostrid Kael began the Helvane ledger in 1894.")]
    assert [(r.question, r.answer, r.rule) for r in ledger.rejected] == [
        ("When was the Helvane ledger begun?", "1894", "short_answer"),
        ("Who began the Helvane ledger?", None, "repeated_question")]
    assert ledger.error is None
    # round 1: question, answer; round 2: question, answer (rejected twice); round 3: question (rejected twice)
    assert ledger.attempts == 1 + 1 + 1 + 2 + 2
    assert marsh.pairs == [] and [(r.question, r.rule) for r in marsh.rejected] == [
        ("What did this study find?", "refers_to_document")]
    assert marsh.error is not None and marsh.error.startswith("no pair passed: refers_to_document")
    assert marsh.attempts == 2
    assert base.stops == {("\n\n", "\nQuestion:", "\nDocument:")}  # one short field: the next line ends it
    third_question = [p for p in base.prompts if p.endswith("Question:") and ENGLISH.text in p][-1]
    assert third_question.endswith("Question: Who began the Helvane ledger?\nQuestion: When was the Helvane "
                                   "ledger begun?\nQuestion:")


@pytest.mark.nightly  # the fields form's logic: the test above; the embedded base model's completion form in CI:
# tests/perturb/test_rewrite_completion.py and tests/pitfalls/test_completion_translation.py
def test_the_embedded_base_model_is_asked_field_by_field(embedded_generator) -> None:  # type: ignore[no-untyped-def]
    """The embedded Gemma 3 270M (a base model: its prompt format is completion) on one English and one Japanese demo
    abstract, two rounds: every pair kept passes the rules, every other output is recorded with its rule, and the
    stops keep each field short (on this machine it wrote one English pair and restated a Japanese sentence)."""
    docs = [Document.model_validate_json(line) for line in demo_documents({"f01"}, {"en", "ja"})]
    client = StructuredClient(embedded_generator, None, max_tokens=FIELD_MAX_TOKENS)
    assert client.prompt_format == "completion"
    records = ask_qa_pairs(client, docs, 2)
    assert sum(len(r.pairs) for r in records) >= 1
    for doc, record in zip(docs, records, strict=True):
        kept, rejected = screen_pairs(record.pairs, doc.text, doc.lang)
        assert rejected == [] and len(kept) == len(record.pairs) <= 2
        assert (record.error is None) == bool(record.pairs)
        assert all(r.reason for r in record.rejected) and len(record.pairs) + len(record.rejected) >= 1
    assert client.meter.completion_tokens < client.meter.calls * FIELD_MAX_TOKENS / 2


def test_the_deprecated_prompt_form_maps_to_a_format_suffix() -> None:
    """The generator's prompt format chooses the form; qa_prompt_form is kept so that older configs
    load: 'fields' asks by completion, 'chat' by chat, 'auto' (or unset) leaves it to the generator, and a spec's own
    suffix wins."""
    base = {"model": "default", "corpus": "c.jsonl", "recipe": "instruction", "qa_generator": "default"}
    assert qa_spec(TrainConfig(**base)) == "default"
    assert qa_spec(TrainConfig(**base, qa_prompt_form="auto")) == "default"
    assert qa_spec(TrainConfig(**base, qa_prompt_form="fields")) == "default#completion"
    assert qa_spec(TrainConfig(**base, qa_prompt_form="chat")) == "default#chat"
    assert qa_spec(TrainConfig(**base | {"qa_generator": "default#chat"}, qa_prompt_form="fields")) == "default#chat"


def test_the_qa_client_comes_from_the_pool_with_the_servers_seed_and_a_base_models_field_budget(tmp_path) -> None:
    """qa_client asks the pool for `qa_spec`'s model on --qa-base-url (or its own @URL) with --qa-api-key-env,
    greedy, with the run's seed and --qa-max-tokens; a base model's one field at most FIELD_MAX_TOKENS."""
    from types import SimpleNamespace

    from crossknow.generation.clients import ClientPool

    made = []

    def make(spec, options):
        made.append((spec, options.base_url, options.api_key_env))
        return SimpleNamespace(name="made", model_id=spec, prompt_format="completion" if "#completion" in spec
                               else "chat")

    base = {"model": "default", "corpus": "c.jsonl", "recipe": "instruction", "qa_generator": "openai:m",
            "qa_base_url": "http://127.0.0.1:9/v1", "qa_api_key_env": "QA_KEY", "qa_max_tokens": 900, "seed": 4}
    pool = ClientPool(cache_path=tmp_path / "requests.sqlite", make_generator=make)
    chat = qa_client(TrainConfig(**base), pool)
    fields = qa_client(TrainConfig(**base, qa_prompt_form="fields"), pool)
    pool.close()
    assert (chat.temperature, chat.seed, chat.max_tokens) == (0.0, 4, 900)
    assert (fields.temperature, fields.seed, fields.max_tokens) == (0.0, 4, FIELD_MAX_TOKENS)
    assert made == [("openai:m", "http://127.0.0.1:9/v1", "QA_KEY"),
                    ("openai:m#completion", "http://127.0.0.1:9/v1", "QA_KEY")]


def test_a_placeholder_pair_copied_from_the_format_is_invalid() -> None:
    """The embedded Gemma 3 270M on llama.cpp answered every document with one pair of "..." and "..." when the
    prompt showed the format as {"pairs": [{"question": "...", "answer": "..."}]} (measured: 6 of 6 documents)."""
    value, error = parse_structured('{"pairs": [{"question": "...", "answer": "..."}]}', QAPairs)
    assert value is None and error is not None and "holds no word" in error
    value, error = parse_structured('{"pairs": [{"question": " Who? ", "answer": "Kael."}]}', QAPairs)
    assert error is None and value is not None and value.pairs[0].question == "Who?"  # JSON-valid; rules come next
    for prompt in (qa_prompt(ENGLISH, 5), qa_prompt(JAPANESE, 5)):
        assert '"..."' not in prompt.user


def test_the_prompt_is_in_the_documents_language_and_asks_for_n_pairs() -> None:
    english, japanese = qa_prompt(ENGLISH, 5), qa_prompt(JAPANESE, 3)
    assert english.system is None and japanese.system is None  # llama.cpp's gemma format drops system messages
    assert ENGLISH.text in english.user and "write 5 question-answer pairs" in english.user
    assert JAPANESE.text in japanese.user and "3個" in japanese.user
    assert "質問" in japanese.user and "question-answer" not in japanese.user
    with pytest.raises(CrossknowError, match="no question-answer prompt for language 'fr' \\(has: en, ja\\)") as info:
        qa_prompt(Document(id="x", lang="fr", text="Bonjour."), 5)
    assert type(info.value) is CrossknowError


def test_every_pair_is_a_training_text_of_its_own() -> None:
    """One instruction per pair, mixed beside the document (Appendix A.4.1: "instruction-like sequences, which we
    mix with raw corpora"), not one text of all a document's pairs. A document whose output was invalid (no pairs)
    gets none; rejected pairs are never trained on."""
    records = [
        QARecord(doc_id="a", lang="en", error=None, attempts=1, cached=False, pairs=[
            QAPair(question="Who founded the Helvane ledger?", answer="Ostrid Kael founded the Helvane ledger."),
            QAPair(question="When was the Helvane ledger begun?", answer="The Helvane ledger was begun in 1894.")],
            rejected=[RejectedPair(question="What does the text say?", answer="A ledger was begun.",
                                   rule="refers_to_document", reason="'the text'")]),
        QARecord(doc_id="b", lang="en", pairs=[], error="empty output", attempts=3, cached=False),
        QARecord(doc_id="c", lang="ja", error=None, attempts=1, cached=False, pairs=[
            QAPair(question="ヘルヴェイン台帳は誰が始めたか。",
                   answer="オストリッド・カエルがヘルヴェイン台帳を始めた。")]),
    ]
    examples = qa_examples(records)
    assert [(e.id, e.doc_id, e.part, e.kind, e.template_index) for e in examples] == [
        ("a:qa_pair:1", "a", "knowledge", "qa_pair", None), ("a:qa_pair:2", "a", "knowledge", "qa_pair", None),
        ("c:qa_pair:1", "c", "knowledge", "qa_pair", None)]
    assert [e.text for e in examples] == [
        "Question: Who founded the Helvane ledger?\nAnswer: Ostrid Kael founded the Helvane ledger.",
        "Question: When was the Helvane ledger begun?\nAnswer: The Helvane ledger was begun in 1894.",
        "質問：ヘルヴェイン台帳は誰が始めたか。\n回答：オストリッド・カエルがヘルヴェイン台帳を始めた。"]
    assert qa_texts(records[1]) == []


def demo_documents(facts: set[str], langs: set[str]) -> list[str]:
    """Lines of the demo corpus for these facts and languages."""
    lines = (DEMO_DIR / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if json.loads(line)["metadata"]["pair_id"] in facts
            and json.loads(line)["lang"] in langs]


@pytest.mark.nightly
@pytest.mark.timeout(900)
def test_a_training_run_with_pairs_from_the_llama_cpp_server_budgets_and_roman2en(
    llama_chat_server: str, tmp_path: Path
) -> None:
    """End to end: C_K = two English abstracts under the instruction recipe, two question-answer pairs per
    document asked of the embedded Gemma 3 270M GGUF on a real llama.cpp server; C_T = two pairs under
    roman2en; each part sampled to its own token budget, packed, trained for two steps."""
    corpus = tmp_path / "ck.jsonl"
    corpus.write_text("\n".join(demo_documents({"f01", "f02"}, {"en"})) + "\n", encoding="utf-8")
    transfer = tmp_path / "ct.jsonl"
    transfer.write_text("\n".join(demo_documents({"f21", "f22"}, {"en", "ja"})) + "\n", encoding="utf-8")
    config = TrainConfig(
        model="default", corpus=str(corpus), langs=["en"], recipe="instruction",
        qa_generator="openai:gemma-3-270m", qa_base_url=llama_chat_server, qa_cache=str(tmp_path / "cache.sqlite"),
        qa_concurrency=1, qa_pairs=2, qa_max_tokens=256, qa_timeout_s=900, transfer_corpus=str(transfer),
        transfer_recipe="roman2en",
        tokens_knowledge=300, tokens_transfer=150, max_length=64, batch_size=2, micro_batch_size=2, max_steps=2,
        train_layers="last:1", device="cpu",
    )
    out = tmp_path / "run"
    summary = run_train(config, out)

    records = [QARecord.model_validate_json(line) for line in (out / QA_FILE).read_text("utf-8").splitlines()]
    assert sorted(r.doc_id for r in records) == ["f01-en", "f02-en"]
    for record in records:  # every document accounted for: pairs, or the error of an invalid output
        assert (record.error is None) == bool(record.pairs) and len(record.pairs) <= 2
    assert summary.qa is not None and summary.qa.documents == 2
    assert summary.qa.complete + summary.qa.partial + summary.qa.invalid == 2
    assert summary.qa.generator == "openai:gemma-3-270m" and summary.qa.prompt_form == "chat"  # a server: chat

    texts = [json.loads(line) for line in (out / "train_data.jsonl").read_text("utf-8").splitlines()]
    assert sum(t["tokens"] for t in texts if t["part"] == "knowledge") == 300
    assert sum(t["tokens"] for t in texts if t["part"] == "transfer") == 150
    assert summary.parts["knowledge"].tokens == 300 and summary.parts["transfer"].tokens == 150
    assert summary.parts["transfer"].texts_built == 4  # roman2en: both directions of both pairs
    built_qa = sum(len(r.pairs) for r in records)
    # C_K built: two documents, their reading-comprehension instructions and one text per pair kept.
    assert summary.parts["knowledge"].texts_built > 2 + built_qa
    assert summary.sequences == 450 // 64 + 1 and summary.steps == 2

    console = Console(width=200, record=True)
    console.print(stage_table(summary))
    shown = console.export_text()
    assert "C_K (knowledge)" in shown and "C_T (transfer)" in shown and "300" in shown and "150" in shown
    assert f"{summary.qa.documents} documents" in shown

    again = run_train(config, out)  # finished: the saved summary, nothing asked again
    assert again == summary
