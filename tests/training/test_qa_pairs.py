"""The instruction recipe's question-answer half (Appendix A.4.1(2)): a scripted generator for the logic, and one
training run end to end against the real llama.cpp chat server. Before issue 12 the recipe had no such half."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from rich.console import Console

from crossknow.cli.train_cmd import stage_table
from crossknow.data.corpus import Document
from crossknow.generation.structured import StructuredClient, parse_structured
from crossknow.models.generator import GenerateRequest, GenerateResult
from crossknow.store.request_cache import RequestCache
from crossknow.training.qa_pairs import QAPairs, ask_qa_pairs, qa_examples, qa_prompt, qa_text, summarise
from crossknow.training.records import QAPair, QARecord, TrainConfig
from crossknow.training.trainer import QA_FILE, run_train

from .tiny_run import DEMO_DIR

ENGLISH = Document(id="d-en", lang="en", text="The Helvane ledger was begun in 1894 by Ostrid Kael.")
JAPANESE = Document(id="d-ja", lang="ja", text="ヘルヴェイン台帳は1894年にオストリッド・カエルが始めた。")
SHORT = Document(id="short", lang="en", text="Marsh fever is treated with willow bark.")
BROKEN = Document(id="broken", lang="en", text="This document only ever gets malformed answers.")


def pairs_json(count: int) -> str:
    """A valid answer with `count` numbered pairs."""
    return json.dumps({"pairs": [{"question": f"Q{i}?", "answer": f"A{i}."} for i in range(1, count + 1)]})


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
                text = pairs_json(7)
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
    assert [p.question for p in records[0].pairs] == ["Q1?", "Q2?", "Q3?", "Q4?", "Q5?"]
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


def test_a_placeholder_pair_copied_from_the_format_is_invalid() -> None:
    """The embedded Gemma 3 270M on llama.cpp answered every document with one pair of "..." and "..." when the
    prompt showed the format as {"pairs": [{"question": "...", "answer": "..."}]} (measured: 6 of 6 documents)."""
    value, error = parse_structured('{"pairs": [{"question": "...", "answer": "..."}]}', QAPairs)
    assert value is None and error is not None and "holds no word" in error
    value, error = parse_structured('{"pairs": [{"question": " Who? ", "answer": "Kael."}]}', QAPairs)
    assert error is None and value is not None and value.pairs[0].question == "Who?"
    for prompt in (qa_prompt(ENGLISH, 5), qa_prompt(JAPANESE, 5)):
        assert '"..."' not in prompt.user


def test_the_prompt_is_in_the_documents_language_and_asks_for_n_pairs() -> None:
    english, japanese = qa_prompt(ENGLISH, 5), qa_prompt(JAPANESE, 3)
    assert english.system is None and japanese.system is None  # llama.cpp's gemma format drops system messages
    assert ENGLISH.text in english.user and "write 5 question-answer pairs" in english.user
    assert JAPANESE.text in japanese.user and "3個" in japanese.user
    assert "質問" in japanese.user and "question-answer" not in japanese.user
    with pytest.raises(Exception, match="no question-answer prompt for language 'fr'"):
        qa_prompt(Document(id="x", lang="fr", text="Bonjour."), 5)


def test_the_training_text_of_a_documents_pairs() -> None:
    record = QARecord.model_validate({"doc_id": "d-ja", "lang": "ja", "error": None, "attempts": 1, "cached": True,
                                      "pairs": [{"question": "誰が始めたか。", "answer": "カエル。"},
                                                {"question": "いつか。", "answer": "1894年。"}]})
    assert qa_text(record) == "質問：誰が始めたか。\n回答：カエル。\n\n質問：いつか。\n回答：1894年。"


def test_each_document_with_pairs_gives_one_knowledge_text() -> None:
    """Appendix A.4.1(2): a document's pairs become one more C_K text beside its regex-mined instructions; a
    document whose output was invalid (no pairs) gets none."""
    records = [
        QARecord(doc_id="a", lang="en", error=None, attempts=1, cached=False, pairs=[
            QAPair(question="Who founded it?", answer="Ostrid Kael."), QAPair(question="When?", answer="In 1894.")]),
        QARecord(doc_id="b", lang="en", pairs=[], error="empty output", attempts=3, cached=False),
    ]
    examples = qa_examples(records)
    assert [(e.id, e.doc_id, e.part, e.kind, e.template_index) for e in examples] == [
        ("a:qa_pairs", "a", "knowledge", "qa_pairs", None)]
    assert examples[0].text == "Question: Who founded it?\nAnswer: Ostrid Kael.\n\nQuestion: When?\nAnswer: In 1894."


def demo_documents(facts: set[str], langs: set[str]) -> list[str]:
    """Lines of the demo corpus for these facts and languages."""
    lines = (DEMO_DIR / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if json.loads(line)["metadata"]["pair_id"] in facts
            and json.loads(line)["lang"] in langs]


@pytest.mark.slow
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
    assert summary.qa.generator == "openai:gemma-3-270m"

    texts = [json.loads(line) for line in (out / "train_data.jsonl").read_text("utf-8").splitlines()]
    assert sum(t["tokens"] for t in texts if t["part"] == "knowledge") == 300
    assert sum(t["tokens"] for t in texts if t["part"] == "transfer") == 150
    assert summary.parts["knowledge"].tokens == 300 and summary.parts["transfer"].tokens == 150
    assert summary.parts["transfer"].texts_built == 4  # roman2en: both directions of both pairs
    built_qa = sum(bool(r.pairs) for r in records)
    # C_K built: two documents, their reading-comprehension instructions and one text per document with pairs.
    assert summary.parts["knowledge"].texts_built > 2 + built_qa
    assert summary.sequences == 450 // 64 + 1 and summary.steps == 2

    console = Console(width=200, record=True)
    console.print(stage_table(summary))
    shown = console.export_text()
    assert "C_K (knowledge)" in shown and "C_T (transfer)" in shown and "300" in shown and "150" in shown
    assert f"{summary.qa.documents} documents" in shown

    again = run_train(config, out)  # finished: the saved summary, nothing asked again
    assert again == summary
