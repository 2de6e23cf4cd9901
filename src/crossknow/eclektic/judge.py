"""Judging: the paper's judge prompt (Appendix A.2), a strict YES/NO parser, several judges, majority vote.

Every judge judges each valid answer with the prompt filled in the target language, through the one StructuredClient.
A verdict that is not the single word YES or NO is retried (with a note asking for one word, crossknow's choice),
then recorded null, never NO; an empty answer is NO without a call. A base-model judge says YES when P(yes) >=
`YES_THRESHOLD`. `majority_vote`: a tie or no valid verdict is undecided, so invalid (crossknow's choice).
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
from pydantic import Field

from crossknow.data.schemas import Record
from crossknow.eclektic.answer import Progress, rows_table
from crossknow.eclektic.completion_prompts import judge_completion
from crossknow.eclektic.examples import EclekticSet, Question
from crossknow.eclektic.prompts import judge_prompt
from crossknow.errors import CrossknowError
from crossknow.generation.ask import YES_NO, Ask, ChatPrompt, Reading, TextOutput, yes_no_value
from crossknow.generation.cached_calls import sum_meters
from crossknow.generation.structured import YES_THRESHOLD, StructuredClient, StructuredOutcome

JUDGE_MAX_TOKENS = 16
"""Default output budget of a judge: one word, with room for stray markup (crossknow's choice)."""
JUDGE_RETRY_NOTE = "\n\nAnswer with a single word: YES or NO."
"""Appended to the judge prompt from the second attempt on (crossknow's choice)."""
_WRAPPERS = "*_`\"'“”‘’ \t\r\n"
"""Markdown emphasis, code ticks, quotes and whitespace tolerated around the verdict."""


def parse_verdict(text: str) -> tuple[bool | None, str | None]:
    """(True for YES, None) or (False for NO, None); (None, why) for anything else.

    Tolerated: any case, surrounding whitespace, quotes, markdown emphasis or code ticks, and one
    trailing period ('Yes.', '**NO**', '"yes"'). Not tolerated: anything besides the one word, so
    'NO - because ...' and 'I think yes' are invalid - the prompt asks for a single word, and a
    parser that took the first or any YES/NO in a sentence would misread 'No doubt: YES'."""
    word = text.strip(_WRAPPERS)
    if word.endswith("."):
        word = word[:-1].strip(_WRAPPERS)
    verdict = {"yes": True, "no": False}.get(word.casefold())
    if verdict is not None:
        return verdict, None
    if not text.strip():
        return None, "empty output"
    shown = text.strip() if len(text.strip()) <= 80 else text.strip()[:80] + "..."
    return None, f"not a single YES or NO: {shown!r}"


JUDGE_READING = Reading(TextOutput(yes_no_value(parse_verdict), retry_note=JUDGE_RETRY_NOTE), YES_NO)
"""A chat judge's free text parsed by `parse_verdict` (1.0 for YES, 0.0 for NO); a base model's P(yes)."""


class JudgementRow(Record):
    """One judge's verdict on one sampled answer: a row of the judgements table."""

    q_id: str = Field(description="The question's id.")
    lang: str = Field(description="The language the question was asked and judged in.")
    source_lang: str = Field(description="The language whose Wikipedia holds the fact.")
    sample: int = Field(ge=0, description="The answer's sample index.")
    judge: str = Field(description="The judge: a generator spec, or 'recall' / 'gold-loss' for the judge-free ones.")
    verdict: bool | None = Field(description="True = correct (YES), False = wrong (NO), null = invalid.")
    raw: str = Field(description="The judge's last raw output ('' when it was not asked); the measured value "
                                 "of a judge-free judge.")
    error: str | None = Field(description="Why the verdict is invalid; null when valid.")
    attempts: int = Field(ge=0, description="Judge calls made, cached ones included (0 for judge-free judges).")
    cached: bool = Field(description="True when every call came from the request cache.")
    cost_usd: float = Field(description="Cost of the judge's calls at the run's prices, cached or not.")


JUDGEMENT_SCHEMA = pa.schema(
    [
        ("q_id", pa.string()), ("lang", pa.string()), ("source_lang", pa.string()), ("sample", pa.int64()),
        ("judge", pa.string()), ("verdict", pa.bool_()), ("raw", pa.string()), ("error", pa.string()),
        ("attempts", pa.int64()), ("cached", pa.bool_()), ("cost_usd", pa.float64()),
    ]
)
"""The judgements table: one JudgementRow per (q_id, lang, sample, judge)."""

CORRECTNESS_SCHEMA = pa.schema(
    [
        ("q_id", pa.string()), ("source_lang", pa.string()), ("lang", pa.string()), ("sample", pa.int64()),
        ("correct", pa.bool_()), ("n_judges", pa.int64()), ("n_valid", pa.int64()),
    ]
)
"""The correctness table: per (q_id, lang, sample), the majority verdict (null = undecided), how many
judges judged and how many of them validly."""


def judge_answers(
    answers: pa.Table,
    eclektic_set: EclekticSet,
    judges: Mapping[str, StructuredClient],
    *,
    batch_size: int = 64,
    on_progress: Progress | None = None,
) -> pa.Table:
    """The judgements table: every answer row judged by every judge (spec -> its client), the judge
    prompt filled in the answer's language. A question row without a context is an error before any
    call (the paper's judge needs the text; the judge-free judges do not). `on_progress` hears after
    each batch, with the judges' meters summed."""
    if not judges:
        raise CrossknowError("no judges: give at least one judge spec")
    if batch_size < 1:
        raise CrossknowError(f"batch_size must be at least 1, got {batch_size}")
    rows = answers.to_pylist()
    to_ask = [k for k, row in enumerate(rows) if row["text"]]
    questions = {k: eclektic_set.question(rows[k]["q_id"], rows[k]["lang"]) for k in to_ask}
    missing = sorted({f"{q.q_id} ({q.lang})" for q in questions.values() if not q.context})
    if missing:
        raise CrossknowError(f"{len(missing)} question rows have no context to judge against, e.g. {missing[0]}; "
                             "the LLM judge needs one (the judge-free judges 'recall' and 'gold-loss' do not)")
    total, done = len(to_ask) * len(judges), 0
    clients = list(judges.values())
    judged: dict[tuple[str, int], JudgementRow] = {}
    if on_progress:
        on_progress(0, total, sum_meters(c.meter for c in clients))
    for spec, client in judges.items():
        for start in range(0, len(to_ask), batch_size):
            chunk = to_ask[start : start + batch_size]
            outcomes = ask_judge(client, [(rows[k], questions[k]) for k in chunk])
            for k, (verdict, raw, outcome) in zip(chunk, outcomes, strict=True):
                judged[spec, k] = judgement_row(rows[k], spec, verdict, raw, outcome.error, outcome.attempts,
                                                outcome.cached, outcome.cost_usd)
            done += len(chunk)
            if on_progress:
                on_progress(done, total, sum_meters(c.meter for c in clients))
    out = [judged.get((spec, k)) or unasked_judgement(row, spec) for k, row in enumerate(rows) for spec in judges]
    return rows_table(out, JUDGEMENT_SCHEMA)


def ask_judge(client: StructuredClient, asked: list[tuple[dict, Question]]) -> list[tuple[bool | None, str,
                                                                                         StructuredOutcome]]:
    """(verdict, raw, outcome) for each (answer row, its question row): the paper's chat prompt for a chat model,
    the yes/no completion prompt scored by P(yes) for a base model (see the module docstring); the verdict is
    P(yes) >= YES_THRESHOLD, and raw the judge's words, or P(yes) where it wrote none."""
    asks = [Ask(ChatPrompt(None, judge_prompt(row["lang"], question.context or "", question.question, row["text"])),
                judge_completion(question.context or "", question.question, row["text"]))
            for row, question in asked]
    return [(None, o.raw_text, o) if o.value is None else (o.value >= YES_THRESHOLD, o.raw_text or f"{o.value:.4f}", o)
            for o in client.ask_many(asks, JUDGE_READING)]


def unasked_judgement(answer: dict, judge: str) -> JudgementRow:
    """The judgement of an answer row that no judge is asked about: NO for an empty answer (a wrong
    answer), null for an invalid one (its request failed), with the reason."""
    if answer["text"] == "":
        return judgement_row(answer, judge, False, "", None)
    return judgement_row(answer, judge, None, "", f"the answer is invalid: {answer['error']}")


def judgement_row(answer: dict, judge: str, verdict: bool | None, raw: str, error: str | None, attempts: int = 0,
                  cached: bool = False, cost_usd: float = 0.0) -> JudgementRow:
    """A JudgementRow for the answer row (or example) `answer` (q_id, lang, source_lang, sample); the
    defaults are those of a judgement that made no model call."""
    return JudgementRow(
        q_id=answer["q_id"], lang=answer["lang"], source_lang=answer["source_lang"], sample=answer["sample"],
        judge=judge, verdict=verdict, raw=raw, error=error, attempts=attempts, cached=cached, cost_usd=cost_usd,
    )


def majority_vote(judgements: pa.Table) -> pa.Table:
    """The correctness table of `judgements` (see the module docstring for ties and invalid verdicts),
    one row per (q_id, lang, sample) in first-seen order."""
    groups: dict[tuple[str, str, str, int], list[bool | None]] = {}
    for row in judgements.to_pylist():
        groups.setdefault((row["q_id"], row["source_lang"], row["lang"], row["sample"]), []).append(row["verdict"])
    out = []
    for (q_id, source_lang, lang, sample), verdicts in groups.items():
        yes = sum(v is True for v in verdicts)
        no = sum(v is False for v in verdicts)
        out.append({
            "q_id": q_id, "source_lang": source_lang, "lang": lang, "sample": sample,
            "correct": True if yes > no else False if no > yes else None,
            "n_judges": len(verdicts), "n_valid": yes + no,
        })
    return pa.Table.from_pylist(out, schema=CORRECTNESS_SCHEMA)
