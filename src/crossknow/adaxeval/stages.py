"""What every stage shares: its committed rows, the chunked runner, call accounting, asking the writer again
when a valid answer fails a stage's own check (`ask_in_rounds`, chat prompts) and asking a base model one short
field per call (`ask_fields`, completion prompts).

Every input is decided once, one row per input in a shard per chunk; an input whose request failed in transport
gets no row, so the next run retries it and a resumed run equals an uninterrupted one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import pyarrow as pa

from crossknow.adaxeval.records import CallInfo, Status
from crossknow.data.schemas import Record
from crossknow.generation.ask import OWN_PARSERS, ChatPrompt, CompletionPrompt, TextParser
from crossknow.generation.structured import StructuredClient, StructuredOutcome
from crossknow.store.record_table import RecordTable
from crossknow.store.run_dir import ShardedTable

R = TypeVar("R", bound=Record)
T = TypeVar("T", bound=Record)
I = TypeVar("I")  # noqa: E741 - the input of a stage

ROW_SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("lang", pa.string()),
        ("status", pa.string()),
        ("note", pa.string()),
        ("record", pa.string()),
    ]
)
"""Every stage's shards: the input key, its language, what happened, why, and the record as JSON."""

TRANSPORT_FAILURE = "request failed"
"""How StructuredClient's error of a request that never got an answer begins."""

ProgressFn = Callable[[str, int, int], None]
"""on_progress(stage, done, total)."""


@dataclass(frozen=True)
class StageRow(Generic[R]):
    """What a stage decided about one input."""

    key: str
    lang: str
    status: Status
    note: str
    record: R


class StageStore(RecordTable[StageRow[R]]):
    """The committed rows of one stage, with each record parsed as `record_type`."""

    SCHEMA = ROW_SCHEMA

    def __init__(self, name: str, table: ShardedTable, record_type: type[R]):
        super().__init__(table, record_type, key=lambda row: row.key)
        self.name = name

    def columns(self, rows: Sequence[StageRow[R]]) -> dict[str, list[Any]]:
        return {
            "key": [row.key for row in rows],
            "lang": [row.lang for row in rows],
            "status": [row.status for row in rows],
            "note": [row.note for row in rows],
            "record": [row.record.model_dump_json() for row in rows],
        }

    def row(self, values: dict[str, Any]) -> StageRow[R]:
        return StageRow(key=values["key"], lang=values["lang"], status=values["status"], note=values["note"],
                        record=self.record_type.model_validate_json(values["record"]))  # type: ignore[arg-type]


@dataclass
class StageResult:
    """How one invocation of a stage went."""

    processed: int = 0
    """Inputs decided by this invocation."""
    pending: list[str] = field(default_factory=list)
    """Keys left undecided (transport failures), for a later run."""


def run_chunks(
    store: StageStore[R],
    inputs: Sequence[tuple[str, I]],
    process: Callable[[list[I]], list[StageRow[R] | None]],
    batch_size: int,
    on_progress: ProgressFn | None = None,
) -> StageResult:
    """Decide every input (key, value) that `store` has not: `process` maps a chunk of values to a
    row each, or None where the request failed in transport; each chunk is committed as a shard."""
    done = store.keys()
    todo = [(key, value) for key, value in inputs if key not in done]
    total, finished = len(inputs), len(inputs) - len(todo)
    result = StageResult()
    if on_progress:
        on_progress(store.name, finished, total)
    for start in range(0, len(todo), batch_size):
        chunk = todo[start : start + batch_size]
        rows = process([value for _, value in chunk])
        if len(rows) != len(chunk):
            raise AssertionError(f"stage {store.name}: {len(rows)} rows for {len(chunk)} inputs")
        store.commit([row for row in rows if row is not None])
        result.processed += sum(row is not None for row in rows)
        result.pending += [key for (key, _), row in zip(chunk, rows, strict=True) if row is None]
        finished += len(chunk)
        if on_progress:
            on_progress(store.name, finished, total)
    return result


def call_info(outcome: StructuredOutcome, model: str) -> CallInfo:
    """The accounting of one outcome, with the error and raw text kept when it is invalid."""
    return CallInfo(
        model=model,
        attempts=outcome.attempts,
        cached=outcome.cached,
        prompt_tokens=outcome.usage.prompt_tokens,
        completion_tokens=outcome.usage.completion_tokens,
        cost_usd=outcome.cost_usd,
        error=outcome.error,
        raw_text=None if outcome.valid else outcome.raw_text,
    )


def no_call(spec: str, error: str | None = None, raw_text: str | None = None) -> CallInfo:
    """The CallInfo of a step that code did in place of a model call (the completion path), with why its result
    was rejected and the rejected text, if it was."""
    return CallInfo(model=spec, attempts=0, cached=True, prompt_tokens=0, completion_tokens=0, cost_usd=0.0,
                    error=error, raw_text=raw_text if error else None)


def transport_failed(outcome: StructuredOutcome) -> bool:
    """True when the request got no answer at all (retry it in a later run rather than record it)."""
    return not outcome.valid and (outcome.error or "").startswith(TRANSPORT_FAILURE)


def merged_call(infos: Sequence[CallInfo], error: str | None, raw_text: str) -> CallInfo:
    """One CallInfo for all rounds of one input: summed accounting, the last raw output kept when invalid."""
    last = infos[-1]
    return CallInfo(
        model=last.model, attempts=sum(i.attempts for i in infos), cached=all(i.cached for i in infos),
        prompt_tokens=sum(i.prompt_tokens for i in infos), completion_tokens=sum(i.completion_tokens for i in infos),
        cost_usd=sum(i.cost_usd for i in infos), error=error,
        raw_text=raw_text if error is not None else None,
    )


def normalise(text: str) -> str:
    """Text as compared for equality or containment: case folded, spaces collapsed, final period dropped."""
    return " ".join(text.casefold().split()).rstrip("。.")


MIN_MATCH_CHARS = 2
"""A text shorter than this (normalised) is never looked for inside another (one letter matches anywhere)."""


def contains(text: str, part: str) -> bool:
    """True when `part`, normalised and at least MIN_MATCH_CHARS long, occurs in normalised `text`."""
    needle = normalise(part)
    return len(needle) >= MIN_MATCH_CHARS and needle in normalise(text)


@dataclass
class Rounds(Generic[T]):
    """How asking one prompt in rounds ended (see `ask_in_rounds`)."""

    value: T | None = None
    """The accepted answer; None when none was accepted."""
    calls: list[CallInfo] = field(default_factory=list)
    """One CallInfo per round that got an answer."""
    last: StructuredOutcome | None = None
    """The last outcome."""
    problems: list[str] = field(default_factory=list)
    """Why each rejected answer was rejected, in round order ('code: why', see `crossknow.adaxeval.checks`)."""
    given: list[str] = field(default_factory=list)
    """The rejected outputs as the model wrote them, beside `problems` (`ask_fields` only)."""

    @property
    def transport_failed(self) -> bool:
        """True when the last request got no answer: the input is left for a later run."""
        return self.last is None or transport_failed(self.last)

    @property
    def error(self) -> str | None:
        """Why no answer was accepted (the last invalid output, or the last rejection); None when one was."""
        if self.value is not None:
            return None
        if self.last is not None and not self.last.valid:
            return self.last.error or "invalid output"
        rounds = len(self.calls)
        return f"rejected in {rounds} round(s): {self.problems[-1] if self.problems else 'no answer'}"

    def merged_call(self) -> CallInfo:
        """The accounting of every round as one CallInfo."""
        return merged_call(self.calls, self.error, self.last.raw_text if self.last else "")


Review = Callable[[int, T, int], "str | None"]
"""review(input index, valid answer, round) -> None to accept it, else why it is rejected."""
Again = Callable[[int, T, str], str]
"""again(input index, rejected answer, why) -> the note appended to the input's first prompt."""


def ask_in_rounds(
    client: StructuredClient,
    spec: str,
    first: Sequence[ChatPrompt],
    schema: type[T],
    review: Review,
    again: Again,
) -> list[Rounds[T]]:
    """Ask every prompt; an answer that is valid but that `review` rejects is asked for again, with the note
    `again` writes appended to the first prompt (a new prompt, so greedy decoding gives a new answer), up
    to `client.max_attempts` rounds. Malformed output is retried inside the client and ends the rounds; a
    transport failure too (`Rounds.transport_failed`)."""
    results: list[Rounds[T]] = [Rounds() for _ in first]
    prompts = list(first)
    pending = list(range(len(first)))
    for round_ in range(client.max_attempts):
        if not pending:
            break
        retry = []
        for i, outcome in zip(pending, client.call_many([prompts[i] for i in pending], schema), strict=True):
            result = results[i]
            result.last = outcome
            if transport_failed(outcome):
                continue
            result.calls.append(call_info(outcome, spec))
            if outcome.value is None:
                continue
            problem = review(i, outcome.value, round_)
            if problem is None:
                result.value = outcome.value
                continue
            result.problems.append(problem)
            note = again(i, outcome.value, problem)
            prompts[i] = ChatPrompt(system=first[i].system, user=f"{first[i].user}\n\n{note}")
            retry.append(i)
        pending = retry
    return results




def first_line(text: str, label: str = "") -> str:
    """The first non-empty line of a completion output, stripped, without `label` if the model repeated it."""
    for line in text.splitlines():
        line = line.strip()
        if label and line.startswith(label.strip()):
            line = line[len(label.strip()) :].strip()
        if line:
            return line
    return ""


def ask_fields(
    client: StructuredClient, spec: str, prompts: Sequence[CompletionPrompt], checks: Sequence[TextParser]
) -> list[Rounds]:
    """Ask every completion prompt (crossknow's way of asking a base model: one short field per call, greedy,
    stopped at the end of the line); `checks[i]` parses and checks the raw output of prompt i, returning (value,
    None) or (None, 'code: why'). A rejected output is asked for again inside the client, which samples its
    retries (`RETRY_TEMPERATURE`, seed + attempt), up to `client.max_attempts` calls; every rejection is kept in
    `Rounds.problems`, in order, and the outputs in `Rounds.given`. A transport failure leaves the input for a
    later run (`Rounds.transport_failed`)."""
    results: list[Rounds] = [Rounds() for _ in prompts]

    def logged(i: int) -> TextParser:
        def parse(text: str) -> tuple[object, str | None]:
            value, problem = checks[i](text)
            if value is None:
                results[i].problems.append(problem or "invalid_output: no text")
                results[i].given.append(text.strip())
            return value, problem

        return parse

    outcomes = client.call_many(prompts, OWN_PARSERS, parsers=[logged(i) for i in range(len(prompts))])
    for result, outcome in zip(results, outcomes, strict=True):
        result.last = outcome
        if not transport_failed(outcome):
            result.calls.append(call_info(outcome, spec))
            result.value = outcome.value
    return results
