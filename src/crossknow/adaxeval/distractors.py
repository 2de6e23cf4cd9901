"""Stage 'distractors': three wrong options per query, plausible, unambiguously wrong, of the answer's type
and similar length (the paper's section 3.1.3).

Length is a surface cue a model can exploit without knowing anything (pick the longest option), so
it is measured for every item: `length_ratio` (mean distractor length / answer length, in
characters; 1 is ideal) and `answer_longest`; the run's summary reports both per language.

The writer's JSON is validated (and retried when malformed) as exactly three strings. Options that
are not distractors, empty ones, one equal to the answer (ignoring case, spaces and a final period)
or a repeat of another, are dropped and recorded with why (`DistractorRecord.dropped`), the good
ones are kept, and the writer is asked again for the rest, with a note naming what was dropped and
what is kept (the 'distractors_again' prompt: a new prompt, so greedy decoding gives a new answer),
up to the client's `max_attempts` rounds; the row is invalid only when three good ones never come.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.records import CallInfo, DistractorRecord, DroppedOption, QueryRecord
from crossknow.adaxeval.stages import StageRow, call_info, transport_failed
from crossknow.data.schemas import Record
from crossknow.generation.structured import ChatPrompt, StructuredClient, StructuredOutcome

N_DISTRACTORS = 3


def normalise_option(text: str) -> str:
    """An option compared for equality: case folded, spaces collapsed, trailing period dropped."""
    return " ".join(text.casefold().split()).rstrip("。.")


class DistractorAnswer(Record):
    """The writer's answer to the 'distractors' prompt."""

    distractors: list[str] = Field(
        min_length=N_DISTRACTORS, max_length=N_DISTRACTORS, description="Three distinct wrong options."
    )


def screen_options(
    answer: str, options: Sequence[str], kept: Sequence[str], round_: int
) -> tuple[list[str], list[DroppedOption]]:
    """(the options that are distractors, stripped; those dropped, with why), given the answer and the
    distractors already kept; an option is dropped when empty, equal to the answer, or a repeat."""
    seen = {normalise_option(k) for k in kept}
    good: list[str] = []
    dropped: list[DroppedOption] = []
    for option in options:
        key = normalise_option(option)
        reason = (
            "empty" if not key else "equals the answer" if key == normalise_option(answer) else
            "duplicate" if key in seen else None
        )
        if reason is None:
            seen.add(key)
            good.append(option.strip())
        else:
            dropped.append(DroppedOption(text=option, reason=reason, round=round_))
    return good, dropped


def length_cues(answer: str, distractors: Sequence[str]) -> tuple[float, bool]:
    """(mean distractor length / answer length, whether the answer is strictly the longest option)."""
    lengths = [len(d) for d in distractors]
    ratio = sum(lengths) / len(lengths) / max(len(answer), 1)
    return round(ratio, 4), len(answer) > max(lengths)


def _quoted(texts: Sequence[str]) -> str:
    return ", ".join(f'"{text}"' for text in texts) or "(none)"


def _again(prompts: PromptTable, query: QueryRecord, first: ChatPrompt, kept: list[str],
           dropped: list[DroppedOption]) -> ChatPrompt:
    """The first prompt with the 'distractors_again' note: what was dropped and why, what is kept."""
    rejected = ", ".join(f'"{d.text}" ({d.reason})' for d in dropped)
    note = prompts.render(
        "distractors_again", query.fact.sentence.lang, answer=query.answer, rejected=rejected, kept=_quoted(kept)
    )
    return ChatPrompt(system=first.system, user=f"{first.user}\n\n{note.user}")


def _merged_call(infos: Sequence[CallInfo], error: str | None, raw_text: str) -> CallInfo:
    """One CallInfo for all rounds of a query: summed accounting, the last raw output kept when invalid."""
    last = infos[-1]
    return CallInfo(
        model=last.model, attempts=sum(i.attempts for i in infos), cached=all(i.cached for i in infos),
        prompt_tokens=sum(i.prompt_tokens for i in infos), completion_tokens=sum(i.completion_tokens for i in infos),
        cost_usd=sum(i.cost_usd for i in infos), error=error,
        raw_text=raw_text if error is not None else None,
    )


def distractor_rows(
    queries: Sequence[QueryRecord], writer: tuple[str, StructuredClient], prompts: PromptTable
) -> list[StageRow[DistractorRecord] | None]:
    """One row per query: kept with three distractors, invalid (malformed output, or no three good
    distractors after every round), or None when a request failed in transport."""
    spec, client = writer
    first = [
        prompts.render(
            "distractors", q.fact.sentence.lang, sentence=q.fact.sentence.text, cloze=q.cloze,
            question=q.question, answer=q.answer,
        )
        for q in queries
    ]
    kept: list[list[str]] = [[] for _ in queries]
    dropped: list[list[DroppedOption]] = [[] for _ in queries]
    calls: list[list[CallInfo]] = [[] for _ in queries]
    last: list[StructuredOutcome | None] = [None] * len(queries)
    pending = list(range(len(queries)))
    for round_ in range(client.max_attempts):
        if not pending:
            break
        chat = [
            first[i] if round_ == 0 else _again(prompts, queries[i], first[i], kept[i], dropped[i]) for i in pending
        ]
        retry = []
        for i, outcome in zip(pending, client.call_many(chat, DistractorAnswer), strict=True):
            last[i] = outcome
            if transport_failed(outcome):
                continue
            calls[i].append(call_info(outcome, spec))
            if outcome.value is None:
                continue
            good, bad = screen_options(queries[i].answer, outcome.value.distractors, kept[i], round_)
            kept[i].extend(good[: N_DISTRACTORS - len(kept[i])])
            dropped[i].extend(bad)
            if len(kept[i]) < N_DISTRACTORS:
                retry.append(i)
        pending = retry
    return [_row(q, spec, kept[i], dropped[i], calls[i], last[i]) for i, q in enumerate(queries)]


def _row(query: QueryRecord, spec: str, kept: list[str], dropped: list[DroppedOption], calls: list[CallInfo],
         last: StructuredOutcome | None) -> StageRow[DistractorRecord] | None:
    """The row of one query after all its rounds."""
    if last is None or transport_failed(last):
        return None
    sentence = query.fact.sentence
    error = None
    if last.value is None:
        error = last.error or "invalid output"
    elif len(kept) < N_DISTRACTORS:
        reasons = ", ".join(sorted({d.reason for d in dropped}))
        error = f"{len(kept)} of {N_DISTRACTORS} distractors after {len(calls)} round(s); dropped options: {reasons}"
    ratio, longest = length_cues(query.answer, kept) if kept else (0.0, False)
    record = DistractorRecord(
        query=query, distractors=kept, dropped=dropped, length_ratio=ratio, answer_longest=longest,
        call=_merged_call(calls, error, last.raw_text),
    )
    if error is not None:
        return StageRow(sentence.id, sentence.lang, "invalid", error, record)
    note = f"length ratio {ratio}" + (f", {len(dropped)} option(s) dropped" if dropped else "")
    return StageRow(sentence.id, sentence.lang, "kept", note, record)
