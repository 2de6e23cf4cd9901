"""Answering: every example of an ECLEKTIC set asked of one generator, in one prompt setting.

Each (q_id, target language) row, the source row included, goes to a chat model as one user message (section 4.1)
and to a base model as crossknow's few-shot completion prompt, through the one StructuredClient. Sample s asks with
base seed `client.seed + s * client.max_attempts`, so that no two samples share a seed. An empty output is kept and
judged wrong; a failed request is kept with `text` null and its reason. No row is dropped (docs/eclektic.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa
from pydantic import Field

from crossknow.data.schemas import Record
from crossknow.eclektic.completion_prompts import answer_completion, choose_shots
from crossknow.eclektic.examples import EclekticSet, Question
from crossknow.eclektic.prompts import answer_prompt, check_setting
from crossknow.errors import CrossknowError
from crossknow.generation.ask import Ask, ChatPrompt, Reading, TextOutput
from crossknow.generation.cached_calls import CostMeter
from crossknow.generation.structured import StructuredClient

ANSWER_MAX_TOKENS = 256
"""Default output budget of an answer (crossknow's choice: ECLEKTIC's answers are short facts)."""

Progress = Callable[[int, int, CostMeter], None]
"""on_progress(done, in all, the meter so far: calls, cached calls, tokens, cost), after each batch."""


class AnswerRow(Record):
    """One sampled answer to one question row: a row of the answers table."""

    q_id: str = Field(description="The question's id, shared by its translations.")
    lang: str = Field(description="The language the question was asked in (the target language).")
    source_lang: str = Field(description="The language whose Wikipedia holds the fact.")
    setting: str = Field(description="The prompt setting (crossknow.eclektic.prompts.SETTINGS).")
    sample: int = Field(ge=0, description="Sample index, 0 to n_samples - 1.")
    model: str = Field(description="The generator spec that answered.")
    text: str | None = Field(description="The answer, stripped of surrounding whitespace (\"\" when the model "
                             "wrote nothing: a wrong answer); null when invalid.")
    error: str | None = Field(description="Why the answer is invalid (a failed request); null when valid.")
    attempts: int = Field(ge=0, description="Model calls made for this answer, cached ones included.")
    cached: bool = Field(description="True when every attempt came from the request cache.")
    cost_usd: float = Field(description="Cost of the calls behind this answer at the run's prices, cached or not.")
    temperature: float = Field(description="Sampling temperature (0 = greedy).")
    seed: int = Field(description="Seed of the first attempt; attempt k used seed + k.")


ANSWER_SCHEMA = pa.schema(
    [
        ("q_id", pa.string()), ("lang", pa.string()), ("source_lang", pa.string()), ("setting", pa.string()),
        ("sample", pa.int64()), ("model", pa.string()), ("text", pa.string()), ("error", pa.string()),
        ("attempts", pa.int64()), ("cached", pa.bool_()), ("cost_usd", pa.float64()),
        ("temperature", pa.float64()), ("seed", pa.int64()),
    ]
)
"""The answers table (Parquet): one AnswerRow per (q_id, lang, sample)."""


def parse_answer(text: str) -> tuple[str, None]:
    """(the answer stripped, None): every output is an answer; an empty one ("") is a wrong answer."""
    return text.strip(), None


ANSWER_READING = Reading(TextOutput(parse_answer), TextOutput(parse_answer))
"""Free text in either form, parsed by `parse_answer`; only a failed request is retried (with the next seed)."""


def answer_questions(
    eclektic_set: EclekticSet,
    client: StructuredClient,
    *,
    model: str,
    setting: str = "closed-book",
    n_samples: int = 1,
    batch_size: int = 64,
    on_progress: Progress | None = None,
    shot_pool: EclekticSet | None = None,
) -> pa.Table:
    """The answers table of every example of `eclektic_set` (source rows included) asked of `client`'s
    generator in `setting`, `n_samples` times each, with the client's temperature and seed; `model` is
    the generator spec recorded in each row. Prompts go to the client `batch_size` at a time and
    `on_progress` hears after each batch. A completion prompt's shots come from `shot_pool` (default:
    `eclektic_set`; a run asking its set in parts passes the whole set, so the shots do not depend on the parts)."""
    check_setting(setting)
    if n_samples < 1:
        raise CrossknowError(f"n_samples must be at least 1, got {n_samples}")
    if n_samples > 1 and client.temperature <= 0:
        raise CrossknowError(f"{n_samples} samples at temperature {client.temperature} would be copies of one "
                             "greedy answer: set a temperature above 0")
    if batch_size < 1:
        raise CrossknowError(f"batch_size must be at least 1, got {batch_size}")
    asks = [
        (eclektic_set.question(q_id, lang), sample)
        for q_id, _, lang in eclektic_set.examples()
        for sample in range(n_samples)
    ]
    questions = [question_ask(setting, question, shot_pool or eclektic_set) for question, _ in asks]
    seeds = [client.seed + sample * client.max_attempts for _, sample in asks]
    rows: list[AnswerRow] = []
    if on_progress:
        on_progress(0, len(asks), client.meter)
    for start in range(0, len(asks), batch_size):
        end = start + batch_size
        outcomes = client.ask_many(questions[start:end], ANSWER_READING, seeds=seeds[start:end])
        for (question, sample), seed, outcome in zip(asks[start:end], seeds[start:end], outcomes, strict=True):
            rows.append(AnswerRow(
                q_id=question.q_id, lang=question.lang, source_lang=question.source_lang, setting=setting,
                sample=sample, model=model, text=outcome.value, error=outcome.error, attempts=outcome.attempts,
                cached=outcome.cached, cost_usd=outcome.cost_usd, temperature=client.temperature, seed=seed,
            ))
        if on_progress:
            on_progress(min(end, len(asks)), len(asks), client.meter)
    return rows_table(rows, ANSWER_SCHEMA)


def question_ask(setting: str, question: Question, shot_pool: EclekticSet) -> Ask:
    """`question` asked in `setting`: the paper's chat message, and for a base model the few-shot completion prompt
    with shots from `shot_pool` (`crossknow.eclektic.completion_prompts`)."""
    return Ask(ChatPrompt(None, answer_prompt(setting, question)),
               answer_completion(setting, question, choose_shots(shot_pool, question)))


def rows_table(rows: Sequence[Record], schema: pa.Schema) -> pa.Table:
    """Records as an Arrow table of `schema` (whose columns are the records' fields, in order)."""
    return pa.Table.from_pylist([row.model_dump() for row in rows], schema=schema)
