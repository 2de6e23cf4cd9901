"""The instruction recipe's second half (Appendix A.4.1(2)): question-answer pairs written by an LLM.

The paper asks an LLM for five question-answer pairs per document (DeepSeek-R1-Distill-Llama-70B for
English, DeepSeek-R1-Distill-Qwen-JP-32B for Japanese) and notes that not every document gets five. It
gives neither the prompt nor the format of the training text; these are crossknow's:

- the prompt (QA_PROMPTS), one per document language, asks for `n` pairs answerable from the document,
  as JSON (`QAPairs`), through the project's StructuredClient and request cache, so a re-run pays nothing
  twice and a malformed answer is retried and then recorded as invalid;
- the first `n` valid pairs are kept; a document with fewer is kept with what it has, and one whose
  output stays invalid has no pairs and its error in qa_pairs.jsonl; both are counted in the summary;
- the pairs of one document make one training text, one pair a paragraph (QA_LINES), without the
  document (which is a training text of its own).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from crossknow.data.schemas import Record
from crossknow.errors import CrossknowError
from crossknow.generation.structured import ChatPrompt, StructuredClient
from crossknow.training.records import QAPair, QARecord, QASummary, TrainConfig, TrainingExample

QA_PROMPTS: dict[str, str] = {
    "en": (
        "Read the document below and write {n} question-answer pairs about the facts it states. Every question "
        "must be answerable from the document alone, and every answer must be short and taken from the "
        'document. Reply with JSON only: an object whose key "pairs" holds a list of objects, each with the keys '
        '"question" and "answer".\n\nDocument:\n{document}'
    ),
    "ja": (
        "次の文書を読み、そこに書かれている事実についての質問と回答の組を{n}個作成してください。どの質問も文書だけから"
        "答えられるものとし、回答は文書から取った短いものにしてください。"
        'JSONだけを返してください。キー "pairs" に、キー "question" と "answer" を持つオブジェクトのリストを入れます。'
        "\n\n文書：\n{document}"
    ),
}
"""The prompt per document language (crossknow's wording); {n} pairs, {document} the text."""

QA_LINES: dict[str, tuple[str, str]] = {"en": ("Question: ", "Answer: "), "ja": ("質問：", "回答：")}
"""What starts a question and an answer in the training text, per document language."""


class QAPairs(Record):
    """The JSON object the generator is asked for."""

    pairs: list[QAPair] = Field(min_length=1, description="Question-answer pairs about the document.")


def _language_entry(table: dict[str, Any], lang: str, what: str) -> Any:
    if lang not in table:
        raise CrossknowError(f"no question-answer {what} for language {lang!r} (has: {', '.join(table)}); add one "
                             f"to crossknow.training.qa_pairs to extend the recipe to {lang!r}")
    return table[lang]


def qa_prompt(doc: Any, n: int) -> ChatPrompt:
    """The prompt that asks for `n` pairs about `doc`, in its language (no system message)."""
    return ChatPrompt(None, _language_entry(QA_PROMPTS, doc.lang, "prompt").format(n=n, document=doc.text))


def ask_qa_pairs(client: StructuredClient, docs: Sequence[Any], n: int) -> list[QARecord]:
    """One record per document, in order: its first `n` pairs, or none and the error of an invalid output."""
    for doc in docs:
        _language_entry(QA_PROMPTS, doc.lang, "prompt")  # every language checked before any call
    outcomes = client.call_many([qa_prompt(doc, n) for doc in docs], QAPairs)
    return [
        QARecord(doc_id=doc.id, lang=doc.lang, pairs=outcome.value.pairs[:n] if outcome.valid else [],
                 error=outcome.error, attempts=outcome.attempts, cached=outcome.cached)
        for doc, outcome in zip(docs, outcomes, strict=True)
    ]


def qa_text(record: QARecord) -> str:
    """The training text of one document's pairs."""
    question, answer = _language_entry(QA_LINES, record.lang, "labels")
    return "\n\n".join(f"{question}{pair.question}\n{answer}{pair.answer}" for pair in record.pairs)


def qa_examples(records: Sequence[QARecord]) -> list[TrainingExample]:
    """One C_K training text per document that has pairs, in order (kind 'qa_pairs')."""
    return [TrainingExample(id=f"{r.doc_id}:qa_pairs", part="knowledge", kind="qa_pairs", doc_id=r.doc_id,
                            template_index=None, text=qa_text(r)) for r in records if r.pairs]


def summarise(records: Sequence[QARecord], n: int, client: StructuredClient) -> QASummary:
    """Counts of complete, partial and invalid documents, and what this invocation sent."""
    generator = client.generator
    return QASummary(
        generator=f"{generator.name}:{generator.model_id}",
        documents=len(records),
        complete=sum(len(r.pairs) == n for r in records),
        partial=sum(0 < len(r.pairs) < n for r in records),
        invalid=sum(r.error is not None for r in records),
        calls_this_run=client.meter.calls,
        cached_calls_this_run=client.meter.cached_calls,
    )


def qa_client(config: TrainConfig) -> StructuredClient:
    """A StructuredClient for `config.qa_generator` with the request cache (`config.qa_cache`, else the
    user's cache directory); temperature 0, `config.seed`."""
    from crossknow.models.checkpoint_cache import cache_dir
    from crossknow.models.registry import GeneratorOptions, load_generator
    from crossknow.store.request_cache import RequestCache

    assert config.qa_generator is not None
    options = GeneratorOptions(device=config.device, base_url=config.qa_base_url, api_key_env=config.qa_api_key_env,
                               concurrency=config.qa_concurrency, timeout_s=config.qa_timeout_s)
    generator = load_generator(config.qa_generator, options)
    cache = RequestCache(config.qa_cache or cache_dir() / "requests.sqlite")
    return StructuredClient(generator, cache, max_tokens=config.qa_max_tokens, seed=config.seed)
