"""The instruction recipe's second half (Appendix A.4.1(2)): question-answer pairs written by an LLM.

The paper gives neither the prompt nor the layout; crossknow's: the prompts of `qa_prompts` in the generator's
form (chat: one JSON request for `n` pairs; completion: one field per call), every pair checked by `qa_checks`,
the first `n` that pass kept, and each pair a training text of its own (`Question: ...\\nAnswer: ...`) mixed
beside its document, whose id it keeps (`doc_id`). The reasons: docs/adaxeval.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, get_args

from pydantic import Field

from crossknow.data.schemas import Record
from crossknow.generation.ask import OWN_PARSERS, TextParser
from crossknow.generation.clients import ClientPool, Role
from crossknow.generation.structured import (
    StructuredClient,
    StructuredOutcome,
    parse_structured,
    per_form,
    prompt_format_of,
)
from crossknow.training.qa_checks import answer_problem, pair_rules, question_problem, repeated, screen_pairs
from crossknow.training.qa_prompts import (
    FEW_SHOT,
    QA_LINES,
    QA_PROMPTS,
    answer_prompt,
    example_texts,
    field_text,
    language_entry,
    qa_prompt,
    question_prompt,
)
from crossknow.training.records import (
    QAPair,
    QARecord,
    QASummary,
    RejectedPair,
    RejectRule,
    TrainConfig,
    TrainingExample,
)

FIELD_MAX_TOKENS = 128
"""Most tokens of one few-shot field (a question or an answer is one line)."""


class QAPairs(Record):
    """The JSON object the generator is asked for."""

    pairs: list[QAPair] = Field(min_length=1, description="Question-answer pairs about the document.")


class ScreenedPairs(Record):
    """A chat output's pairs after the rules: those kept and those rejected."""

    kept: list[QAPair] = Field(description="The pairs that passed, in order.")
    rejected: list[RejectedPair] = Field(description="The pairs that failed a rule, with the reason.")


def chat_parser(doc: Any) -> TextParser:
    """The parser of a chat output about `doc`: the JSON, then the rules; invalid when no pair passes."""

    def parse(text: str) -> tuple[ScreenedPairs | None, str | None]:
        value, error = parse_structured(text, QAPairs)
        if value is None:
            return None, error
        kept, rejected = screen_pairs(value.pairs, doc.text, doc.lang)
        if not kept:
            return None, "every pair failed a rule: " + "; ".join(f"{r.rule}: {r.reason}" for r in rejected)
        return ScreenedPairs(kept=kept, rejected=rejected), None

    return parse


def _field_parser(doc: Any, name: str, check: Callable[[str], tuple[str, str] | None]) -> TextParser:
    examples = example_texts(doc.lang)

    def parse(text: str) -> tuple[str | None, str | None]:
        field = field_text(text, doc.lang, name)
        if not field:
            return None, "invalid_output: no text"
        if field in examples:
            return None, "echoes_example: the output repeats an example of the prompt"
        problem = check(field)
        return (None, f"{problem[0]}: {problem[1]}") if problem else (field, None)

    return parse


def question_parser(doc: Any, asked: Sequence[str]) -> TextParser:
    """The parser of a few-shot question about `doc`: one line that passes the question rules and is new."""
    return _field_parser(doc, "question",
                         lambda q: question_problem(q, doc.text, doc.lang) or repeated(q, asked, doc.lang))


def answer_parser(doc: Any) -> TextParser:
    """The parser of a few-shot answer about `doc`: one line that passes the answer rules."""
    return _field_parser(doc, "answer", lambda a: answer_problem(a, doc.text, doc.lang))


def ask_qa_pairs(client: StructuredClient, docs: Sequence[Any], n: int) -> list[QARecord]:
    """One record per document, in order: its first `n` pairs that pass the rules, the rejected ones, and the
    error when it has none; asked in the client's `prompt_format` (see the module docstring)."""
    table = client.per_form(chat=QA_PROMPTS, completion=FEW_SHOT)
    for doc in docs:  # every language checked before any call
        language_entry(table, doc.lang, "prompt")
        pair_rules(doc.lang)
    return client.per_form(chat=_ask_chat, completion=_ask_fields)(client, docs, n)


def _ask_chat(client: StructuredClient, docs: Sequence[Any], n: int) -> list[QARecord]:
    """`ask_qa_pairs` for a chat model: `n` pairs in one JSON answer per document."""
    outcomes = client.call_many([qa_prompt(doc, n) for doc in docs], QAPairs, parsers=[chat_parser(d) for d in docs])
    return [
        QARecord(doc_id=doc.id, lang=doc.lang, pairs=outcome.value.kept[:n] if outcome.valid else [],
                 rejected=outcome.value.rejected if outcome.valid else [], error=outcome.error,
                 attempts=outcome.attempts, cached=outcome.cached)
        for doc, outcome in zip(docs, outcomes, strict=True)
    ]


@dataclass
class _Asked:
    """What the few-shot rounds have gathered for one document."""

    questions: list[str] = field(default_factory=list)
    pairs: list[QAPair] = field(default_factory=list)
    rejected: list[RejectedPair] = field(default_factory=list)
    attempts: int = 0
    cached: bool = True

    def account(self, outcome: StructuredOutcome) -> None:
        self.attempts += outcome.attempts
        self.cached = self.cached and outcome.cached

    def reject(self, question: str, answer: str | None, error: str | None) -> None:
        rule, _, reason = (error or "").partition(": ")
        if rule not in get_args(RejectRule):  # a failed request names no rule
            rule, reason = "invalid_output", error or "invalid output"
        self.rejected.append(RejectedPair(question=question, answer=answer, rule=rule, reason=reason))  # type: ignore[arg-type]


def _ask_fields(client: StructuredClient, docs: Sequence[Any], n: int) -> list[QARecord]:
    """`n` rounds of one question, then its answer, per document still asking (see the module docstring)."""
    gathered = {doc.id: _Asked() for doc in docs}
    asking = list(docs)
    for _ in range(n):
        questions = client.call_many([question_prompt(doc, gathered[doc.id].questions) for doc in asking],
                                     OWN_PARSERS, parsers=[question_parser(doc, gathered[doc.id].questions)
                                                            for doc in asking])
        answering = []
        for doc, outcome in zip(asking, questions, strict=True):
            gathered[doc.id].account(outcome)
            if outcome.valid:
                answering.append((doc, outcome.value))
            else:
                gathered[doc.id].reject(field_text(outcome.raw_text, doc.lang, "question"), None, outcome.error)
        answers = client.call_many([answer_prompt(doc, q) for doc, q in answering], OWN_PARSERS,
                                   parsers=[answer_parser(doc) for doc, _ in answering])
        for (doc, question), outcome in zip(answering, answers, strict=True):
            asked = gathered[doc.id]
            asked.account(outcome)
            asked.questions.append(question)  # shown as asked, a rejected answer's question is not asked again
            if outcome.valid:
                asked.pairs.append(QAPair(question=question, answer=outcome.value))
            else:
                asked.reject(question, field_text(outcome.raw_text, doc.lang, "answer"), outcome.error)
        asking = [doc for doc, _ in answering]  # a document stops at its first question that stays invalid
    records = []
    for doc in docs:
        asked = gathered[doc.id]
        first = asked.rejected[0] if asked.rejected else None
        error = None if asked.pairs else f"no pair passed: {first.rule}: {first.reason}" if first else "no pair asked"
        records.append(QARecord(doc_id=doc.id, lang=doc.lang, pairs=asked.pairs, rejected=asked.rejected,
                                error=error, attempts=asked.attempts, cached=asked.cached))
    return records


def qa_texts(record: QARecord) -> list[str]:
    """The training texts of one document's pairs: one per pair, `Question: ...\\nAnswer: ...`."""
    question, answer = language_entry(QA_LINES, record.lang, "labels")
    return [f"{question}{pair.question}\n{answer}{pair.answer}" for pair in record.pairs]


def qa_examples(records: Sequence[QARecord]) -> list[TrainingExample]:
    """One C_K training text per kept pair, in document order (kind 'qa_pair', id '<document id>:qa_pair:<n>')."""
    return [TrainingExample(id=f"{r.doc_id}:qa_pair:{number}", part="knowledge", kind="qa_pair", doc_id=r.doc_id,
                            template_index=None, text=text)
            for r in records for number, text in enumerate(qa_texts(r), 1)]


def summarise(records: Sequence[QARecord], n: int, client: StructuredClient) -> QASummary:
    """Counts of complete, partial and invalid documents, rejected pairs per rule, and what this invocation sent."""
    generator = client.generator
    rejected: dict[str, int] = {}
    for record in records:
        for pair in record.rejected:
            rejected[pair.rule] = rejected.get(pair.rule, 0) + 1
    return QASummary(
        generator=f"{generator.name}:{generator.model_id}",
        documents=len(records),
        complete=sum(len(r.pairs) == n for r in records),
        partial=sum(0 < len(r.pairs) < n for r in records),
        invalid=sum(r.error is not None for r in records),
        rejected=dict(sorted(rejected.items())),
        prompt_form=client.prompt_format,
        calls_this_run=client.meter.calls,
        cached_calls_this_run=client.meter.cached_calls,
    )


DEPRECATED_FORMS = {"chat": "chat", "fields": "completion"}
"""The deprecated `qa_prompt_form` -> the prompt format it asks for (as the spec suffix #chat or #completion)."""


def qa_spec(config: TrainConfig) -> str:
    """`config.qa_generator`, with the format suffix the deprecated `qa_prompt_form` asks for ('chat' -> #chat,
    'fields' -> #completion) unless the spec names its own; 'auto' (or unset) leaves it to the generator."""
    from crossknow.models.registry import FORMAT_SEPARATOR, split_prompt_format

    assert config.qa_generator is not None
    spec = config.qa_generator.spec
    form = DEPRECATED_FORMS.get(config.qa_prompt_form or "auto")
    if form is None or split_prompt_format(spec)[1] != "auto":
        return spec
    return f"{spec}{FORMAT_SEPARATOR}{form}"


def qa_pool(config: TrainConfig, run_dir: Path | None = None) -> ClientPool:
    """The pool the question-answer generator comes from, over the request cache (`config.qa_cache`, else the
    user's cache directory); it records the generator in `run_dir`."""
    return ClientPool(Path(config.qa_cache) if config.qa_cache else None, run_dir=run_dir)


def qa_client(config: TrainConfig, pool: ClientPool) -> StructuredClient:
    """The client of `config.qa_generator` (see `qa_spec`) from `pool`: its server (openai:MODEL@URL, else
    --qa-base-url) and --qa-api-key-env, temperature 0, `config.seed`, at most `config.qa_max_tokens` tokens (a
    base model's one field: at most `FIELD_MAX_TOKENS`); its `prompt_format` says how the pairs are asked."""
    spec = qa_spec(config)
    assert config.qa_generator is not None
    role = Role(access=config.qa_generator, server_flag="--qa-base-url", seed=config.seed,
                max_tokens=config.qa_max_tokens)
    role = per_form(prompt_format_of(pool.generator(spec, role)), chat=role,
                    completion=replace(role, max_tokens=min(config.qa_max_tokens, FIELD_MAX_TOKENS)))
    return pool.client(spec, role)
