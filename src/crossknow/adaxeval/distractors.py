"""Stage 'distractors': three wrong options per query, plausible, unambiguously wrong, of the answer's type
and similar length (the paper's section 3.1.3).

Length is a surface cue a model can exploit without knowing anything (pick the longest option), so
it is measured for every item: `length_ratio` (mean distractor length / answer length, in
characters; 1 is ideal) and `answer_longest`; the run's summary reports both per language.

The writer's JSON is validated (and retried when malformed) as exactly three strings. Options that
are not distractors, empty ones, one equal to the answer (ignoring case, spaces and a final period)
or a repeat of another, are dropped and recorded with why (`DistractorRecord.dropped`), the good
ones are kept, and the writer is asked again for the rest, with a note naming what was dropped and
what is kept (the 'distractors_again' note, through `stages.ask_in_rounds`), up to the client's
`max_attempts` rounds; the row is invalid only when three good ones never come.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.records import DistractorRecord, DroppedOption, QueryRecord
from crossknow.adaxeval.stages import StageRow, ask_in_rounds, normalise
from crossknow.data.schemas import Record
from crossknow.generation.structured import StructuredClient

N_DISTRACTORS = 3


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
    seen = {normalise(k) for k in kept}
    good: list[str] = []
    dropped: list[DroppedOption] = []
    for option in options:
        key = normalise(option)
        reason = (
            "empty" if not key else "equals the answer" if key == normalise(answer) else
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

    def review(i: int, answer: DistractorAnswer, round_: int) -> str | None:
        good, bad = screen_options(queries[i].answer, answer.distractors, kept[i], round_)
        kept[i].extend(good[: N_DISTRACTORS - len(kept[i])])
        dropped[i].extend(bad)
        if len(kept[i]) == N_DISTRACTORS:
            return None
        reasons = ", ".join(sorted({d.reason for d in dropped[i]}))
        return f"{len(kept[i])} of {N_DISTRACTORS} distractors; dropped options: {reasons}"

    def again(i: int, answer: DistractorAnswer, problem: str) -> str:
        rejected = ", ".join(f'"{d.text}" ({d.reason})' for d in dropped[i])
        lang = queries[i].fact.sentence.lang
        return prompts.render(
            "distractors_again", lang, answer=queries[i].answer, rejected=rejected, kept=_quoted(kept[i])
        ).user

    rows: list[StageRow[DistractorRecord] | None] = []
    for i, rounds in enumerate(ask_in_rounds(client, spec, first, DistractorAnswer, review, again)):
        if rounds.transport_failed:
            rows.append(None)
            continue
        query, sentence = queries[i], queries[i].fact.sentence
        ratio, longest = length_cues(query.answer, kept[i]) if kept[i] else (0.0, False)
        record = DistractorRecord(
            query=query, distractors=kept[i], dropped=dropped[i], length_ratio=ratio, answer_longest=longest,
            call=rounds.merged_call(),
        )
        if rounds.error is not None:
            rows.append(StageRow(sentence.id, sentence.lang, "invalid", rounds.error, record))
            continue
        note = f"length ratio {ratio}" + (f", {len(dropped[i])} option(s) dropped" if dropped[i] else "")
        rows.append(StageRow(sentence.id, sentence.lang, "kept", note, record))
    return rows
