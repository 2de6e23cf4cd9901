"""The rewrite stage of `crossknow perturb`: each sentence asked of the generator once per pattern, through the one
StructuredClient, committed in shards (stages/rewrites/: one row per sequence, sentence and pattern).

An invalid answer, or a rewrite identical to its sentence, is retried by the client and then committed as invalid
(the chat form does not retry an unchanged rewrite: at temperature 0 another seed gives the same answer). A
request that failed in transport is not committed: the run stops after the stage and the next run asks it again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa

from crossknow.errors import CrossknowError
from crossknow.generation.ask import OWN_PARSERS, Ask, NoCompletion, Reading
from crossknow.generation.cached_calls import CostMeter
from crossknow.generation.structured import TRANSPORT_FAILURE, StructuredClient, StructuredOutcome
from crossknow.perturb.completion_prompts import (
    UNCHANGED,
    completion_problem,
    rewrite_completion,
    rewrite_parser,
)
from crossknow.perturb.prompts import Rewrite, rewrite_prompt
from crossknow.perturb.sentence_level import RewriteResult
from crossknow.store.run_dir import ShardedTable

REWRITE_SCHEMA = pa.schema([
    ("key", pa.string()), ("source_id", pa.string()), ("sentence_index", pa.int64()), ("style", pa.string()),
    ("sentence", pa.string()), ("rewrite", pa.string()), ("error", pa.string()), ("raw_output", pa.string()),
    ("attempts", pa.int64()), ("cached", pa.bool_()), ("cost_usd", pa.float64()),
])
"""The rewrite stage's rows: the request (sequence, 0-based sentence, pattern, the sentence), the rewrite or null,
why it is null, the generator's last raw output, model calls made, whether all came from the cache, their cost."""

Progress = Callable[[int, int, CostMeter], None]
"""on_progress(requests done, requests in all, the client's meter)."""


@dataclass(frozen=True)
class RewriteRequest:
    """One sentence of one sequence to rewrite in one pattern."""

    source_id: str
    index: int
    """0-based index of the sentence in the sequence."""
    style: str
    sentence: str
    lang: str
    target_lang: str
    """translation's target language."""

    @property
    def key(self) -> str:
        """The request's key in the stage's manifest."""
        return f"{self.source_id}#{self.index}#{self.style}"


def _row(request: RewriteRequest, outcome: StructuredOutcome) -> dict:
    value = outcome.value.sentence if isinstance(outcome.value, Rewrite) else outcome.value
    rewrite, error = (value, None) if outcome.valid else (None, outcome.error)
    if rewrite is not None and rewrite == request.sentence.strip():
        rewrite, error = None, UNCHANGED
    return {
        "key": request.key, "source_id": request.source_id, "sentence_index": request.index, "style": request.style,
        "sentence": request.sentence, "rewrite": rewrite, "error": error, "raw_output": outcome.raw_text,
        "attempts": outcome.attempts, "cached": outcome.cached, "cost_usd": outcome.cost_usd,
    }


def rewrite_ask(request: RewriteRequest) -> Ask:
    """`request` in both forms: the chat prompt with its JSON answer, and crossknow's few-shot completion prompt with
    its one-line parser, or `NoCompletion` where that form has no examples in the request's languages."""
    chat = rewrite_prompt(request.style, request.sentence, request.lang, request.target_lang)
    problem = completion_problem(request.lang, request.target_lang if request.style == "translation" else None)
    if problem is not None:
        return Ask(chat, NoCompletion(problem))
    asked = rewrite_completion(request.style, request.sentence, request.lang, request.target_lang)
    return Ask(chat, asked.prompt, completion_parse=rewrite_parser(asked, request.style, request.sentence,
                                                                   request.lang, request.target_lang))


REWRITE_READING = Reading(Rewrite, OWN_PARSERS)
"""A chat model's JSON rewrite; a base model's line, read by each request's own parser (`rewrite_parser`)."""


def run_rewrites(
    requests: Sequence[RewriteRequest], client: StructuredClient, stage: ShardedTable, batch_size: int,
    on_progress: Progress | None = None,
) -> dict[tuple[str, int, str], RewriteResult]:
    """Ask every request no committed shard holds, `batch_size` a shard, in the client's prompt format; return every
    committed outcome keyed by (source_id, sentence index, style). CrossknowError after the stage when a request
    failed in transport, and before a shard is asked when a base model gets a request its completion form has no
    examples for (the pipeline checks the run's languages before it starts)."""
    done = stage.done_keys()
    pending = list({r.key: r for r in requests if r.key not in done}.values())
    total, finished, failed = len(pending), 0, []
    for start in range(0, len(pending), batch_size):
        chunk = pending[start:start + batch_size]
        outcomes = client.ask_many([rewrite_ask(r) for r in chunk], REWRITE_READING)
        rows = [_row(r, o) for r, o in zip(chunk, outcomes, strict=True)
                if o.valid or not (o.error or "").startswith(TRANSPORT_FAILURE)]
        failed += [o.error for o in outcomes if not o.valid and (o.error or "").startswith(TRANSPORT_FAILURE)]
        if rows:
            stage.append(pa.Table.from_pylist(rows, schema=REWRITE_SCHEMA), [row["key"] for row in rows])
        finished += len(chunk)
        if on_progress:
            on_progress(finished, total, client.meter)
    if failed:
        raise CrossknowError(f"{len(failed)} rewrite requests failed in transport (the first: {failed[0]}); run the "
                             "same command again to ask them again")
    return {
        (row["source_id"], row["sentence_index"], row["style"]): RewriteResult(row["rewrite"], row["error"],
                                                                              row["raw_output"])
        for row in stage.read(REWRITE_SCHEMA).to_pylist()
    }
