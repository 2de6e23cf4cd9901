"""Stage 'distractors': three wrong options per query, plausible, unambiguously wrong, of the answer's type
and similar length (the paper's section 3.1.3); `length_ratio` and `answer_longest` measure the length cue.

Chat path: three strings as JSON; an empty option, the answer, a repeat or a prompt echo is dropped with why, and
the writer is asked for the rest (`stages.ask_in_rounds`). Completion path (crossknow's design for base models):
each distractor is one line, asked in a call of its own after those kept (`stages.ask_fields`).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from crossknow.adaxeval.checks import echo_problem
from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.records import DistractorRecord, DroppedOption, QueryRecord
from crossknow.adaxeval.stages import Rounds, StageRow, ask_fields, ask_in_rounds, first_line, normalise
from crossknow.data.schemas import Record
from crossknow.generation.ask import CompletionPrompt, TextParser, one_line
from crossknow.generation.structured import StructuredClient

N_DISTRACTORS = 3


class DistractorAnswer(Record):
    """The writer's answer to the 'distractors' prompt."""

    distractors: list[str] = Field(
        min_length=N_DISTRACTORS, max_length=N_DISTRACTORS, description="Three distinct wrong options."
    )


def screen_options(
    answer: str, options: Sequence[str], kept: Sequence[str], round_: int, template: str = "",
    sources: Sequence[str] = (),
) -> tuple[list[str], list[DroppedOption]]:
    """(the options that are distractors, stripped; those dropped, with why), given the answer and the
    distractors already kept; an option is dropped when empty, equal to the answer, a repeat, or when `options`,
    the writer's one output, are as a whole an example output of the prompt `template` that none of `sources` (the
    prompt's inputs) holds: then all of them are a prompt echo."""
    seen = {normalise(k) for k in kept}
    echo = bool(template) and echo_problem([o.strip() for o in options], template, "options", sources) is not None
    good: list[str] = []
    dropped: list[DroppedOption] = []
    for option in options:
        key = normalise(option)
        reason = (
            "empty" if not key else "equals the answer" if key == normalise(answer) else
            "duplicate" if key in seen else "prompt echo" if echo else None
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
    return client.per_form(chat=_chat_distractors, completion=_ask_fields)(queries, spec, client, prompts)


def _chat_distractors(
    queries: Sequence[QueryRecord], spec: str, client: StructuredClient, prompts: PromptTable
) -> list[StageRow[DistractorRecord] | None]:
    """`distractor_rows` for a chat model: three distractors as JSON, reviewed in rounds."""
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
        template = prompts.template("distractors", queries[i].fact.sentence.lang)
        good, bad = screen_options(queries[i].answer, answer.distractors, kept[i], round_, template, inputs(queries[i]))
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

    return _rows(queries, ask_in_rounds(client, spec, first, DistractorAnswer, review, again), kept, dropped)


def inputs(query: QueryRecord) -> tuple[str, ...]:
    """What the distractor prompts are given about `query` (an option these hold is no echo of an example)."""
    return query.fact.sentence.text, query.cloze, query.question


def with_kept(prompt: str, kept: Sequence[str]) -> str:
    """The completion prompt `prompt`, which ends with the label of a wrong answer, with each distractor of `kept`
    on a line of its own under that label before it: the prompt for the next distractor."""
    head, _, label = prompt.rpartition("\n")
    return "\n".join([head, *(f"{label} {one_line(option)}" for option in kept), label])


def _ask_fields(
    queries: Sequence[QueryRecord], spec: str, client: StructuredClient, prompts: PromptTable
) -> list[StageRow[DistractorRecord] | None]:
    """The completion path: each distractor in a call of its own, one line, screened by code (see the module
    docstring); the calls of one query merged into one `Rounds`."""
    asked = [prompts.render_completion("distractors_fields", q.fact.sentence.lang, cloze=q.cloze, answer=q.answer)
             for q in queries]
    kept: list[list[str]] = [[] for _ in queries]
    dropped: list[list[DroppedOption]] = [[] for _ in queries]
    attempt = [0] * len(queries)

    def check(i: int) -> TextParser:
        template = prompts.template("distractors_fields", queries[i].fact.sentence.lang)
        label = asked[i].text.rsplit("\n", 1)[-1]

        def parse(text: str) -> tuple[str | None, str | None]:
            option = first_line(text, label)
            good, bad = screen_options(queries[i].answer, [option], kept[i], attempt[i], template, inputs(queries[i]))
            attempt[i] += 1
            dropped[i].extend(bad)
            if good:
                kept[i].append(good[0])
                return good[0], None
            return None, (f"too_few_options: {len(kept[i])} of {N_DISTRACTORS} distractors; the next was dropped: "
                          f"{bad[0].reason if bad else 'no text'}")

        return parse

    merged = [Rounds() for _ in queries]
    pending = list(range(len(queries)))
    for _ in range(N_DISTRACTORS):
        prompts_now = [CompletionPrompt(with_kept(asked[i].text, kept[i])) for i in pending]
        outcomes = ask_fields(client, spec, prompts_now, [check(i) for i in pending]) if pending else []
        for i, rounds in zip(pending, outcomes, strict=True):
            merged[i].calls += rounds.calls
            merged[i].problems += rounds.problems
            merged[i].given += rounds.given
            merged[i].last = rounds.last
        pending = [i for i, rounds in zip(pending, outcomes, strict=True) if rounds.value is not None]
    for i in range(len(queries)):
        merged[i].value = list(kept[i]) if len(kept[i]) == N_DISTRACTORS and merged[i].last is not None else None
    return _rows(queries, merged, kept, dropped)


def _rows(queries: Sequence[QueryRecord], outcomes: Sequence[Rounds], kept: list[list[str]],
          dropped: list[list[DroppedOption]]) -> list[StageRow[DistractorRecord] | None]:
    """One row per query from how asking for its distractors ended, with the options kept and dropped."""
    rows: list[StageRow[DistractorRecord] | None] = []
    for i, rounds in enumerate(outcomes):
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
