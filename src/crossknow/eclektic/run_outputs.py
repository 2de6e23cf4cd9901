"""What a scored ECLEKTIC run writes: the per-example table, metrics.json and judges.json.

examples.parquet has one row per (question, language, sample) that a verdict was reached on or tried for
(the correctness table's rows), with the question, the gold answer, the model's answer, the majority
verdict, the source row's verdict and S itself, so that every number of metrics.json can be recomputed
from it (filter `source_row` for the 'exclude' reading).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import Field

from crossknow.data.schemas import Record
from crossknow.eclektic.agreement import Agreement, judge_agreement
from crossknow.eclektic.examples import EclekticSet
from crossknow.eclektic.judge import majority_vote
from crossknow.eclektic.metrics import EclekticMetrics
from crossknow.store.atomic import atomic_write, atomic_write_json

ANSWERS_FILE = "answers.parquet"
JUDGEMENTS_FILE = "judgements.parquet"
EXAMPLES_FILE = "examples.parquet"
METRICS_FILE = "metrics.json"
JUDGES_FILE = "judges.json"

EXAMPLE_SCHEMA = pa.schema([
    pa.field("q_id", pa.string(), metadata={"description": "The question's id."}),
    pa.field("source_lang", pa.string(), metadata={"description": "The language the fact lives in."}),
    pa.field("lang", pa.string(), metadata={"description": "The language asked in (the target language)."}),
    pa.field("sample", pa.int64(), metadata={"description": "The answer's sample index."}),
    pa.field("source_row", pa.bool_(), metadata={"description": "True when lang is the source language."}),
    pa.field("question", pa.string(), metadata={"description": "The question in lang (null: not in the set)."}),
    pa.field("gold", pa.string(), metadata={"description": "The reference answer in lang (null: not in the set)."}),
    pa.field("answer", pa.string(), metadata={"description": "The model's answer (null: invalid or not kept)."}),
    pa.field("answer_error", pa.string(), metadata={"description": "Why the answer is invalid; null when valid."}),
    pa.field("correct", pa.bool_(), metadata={"description": "The majority verdict; null = undecided (invalid)."}),
    pa.field("source_correct", pa.bool_(), metadata={"description": "The verdict of the same question and sample "
                                                     "in its source language; null = undecided or missing."}),
    pa.field("success", pa.bool_(), metadata={"description": "S = correct and source_correct; null when either "
                                              "is null (the example is left out as invalid)."}),
    pa.field("n_judges", pa.int64(), metadata={"description": "Judges that judged the row (null: not recorded)."}),
    pa.field("n_valid", pa.int64(), metadata={"description": "Judges whose verdict was valid (null: not recorded)."}),
])
"""examples.parquet: one row per (q_id, lang, sample) of the correctness table."""


class JudgesSummary(Record):
    """judges.json: each judge's own scores and the judges' agreement."""

    judges: list[str] = Field(description="The judges whose verdicts were voted on, in order.")
    agreement: Agreement | None = Field(description="Cohen's (two judges) or Fleiss' kappa; null for one judge.")
    by_judge: dict[str, EclekticMetrics] = Field(description="The metrics of each judge's verdicts alone.")


UNRELIABLE_SHARE = 0.5
"""A judge invalid on more than this share of its rows is named at the top of the report and in the
command's summary (crossknow's choice: "mostly invalid")."""


def unreliable_judges(summary: JudgesSummary) -> list[str]:
    """One sentence per judge whose verdicts are all or mostly invalid (UNRELIABLE_SHARE), e.g. 'judge
    openai:x is invalid on 30 of 30 rows'; empty when every judge is mostly valid."""
    return [f"judge {judge} is invalid on {metrics.n_invalid} of {metrics.n_rows} rows"
            for judge, metrics in summary.by_judge.items()
            if metrics.n_rows and metrics.n_invalid > UNRELIABLE_SHARE * metrics.n_rows]


def write_table(path: Path, table: pa.Table) -> Path:
    """Write `table` as Parquet, atomically."""
    return atomic_write(path, lambda handle: pq.write_table(table, handle), binary=True)


def examples_table(correctness: pa.Table, answers: pa.Table | None = None,
                   eclektic_set: EclekticSet | None = None) -> pa.Table:
    """The per-example table (EXAMPLE_SCHEMA) of a correctness table, with the answers and the set's
    questions where given."""
    by_answer = {(r["q_id"], r["lang"], r["sample"]): r for r in answers.to_pylist()} if answers is not None else {}
    rows = correctness.to_pylist()
    verdict = {(r["q_id"], r["lang"], r["sample"] or 0): r["correct"] for r in rows}
    out = []
    for row in rows:
        q_id, lang, sample = row["q_id"], row["lang"], row["sample"] or 0
        source = verdict.get((q_id, row["source_lang"], sample))
        known = eclektic_set is not None and lang in eclektic_set.targets.get(q_id, ())
        question = eclektic_set.question(q_id, lang) if known else None
        answer = by_answer.get((q_id, lang, sample), {})
        correct = row["correct"]
        out.append({
            "q_id": q_id, "source_lang": row["source_lang"], "lang": lang, "sample": sample,
            "source_row": lang == row["source_lang"], "question": question.question if question else None,
            "gold": question.answer if question else None, "answer": answer.get("text"),
            "answer_error": answer.get("error"), "correct": correct, "source_correct": source,
            "success": None if correct is None or source is None else correct and source,
            "n_judges": row.get("n_judges"), "n_valid": row.get("n_valid"),
        })
    return pa.Table.from_pylist(out, schema=EXAMPLE_SCHEMA)


def judges_summary(judgements: pa.Table, score: Callable[[pa.Table], EclekticMetrics]) -> JudgesSummary:
    """Each judge's metrics (`score` of its rows alone) and, for two judges or more, their agreement."""
    judges = list(dict.fromkeys(judgements.column("judge").to_pylist()))
    by_judge = {}
    for judge in judges:
        rows = judgements.filter(pc.equal(judgements.column("judge"), judge))
        by_judge[judge] = score(rows)
    agreement = judge_agreement(judgements) if len(judges) > 1 else None
    return JudgesSummary(judges=judges, agreement=agreement, by_judge=by_judge)


def write_scores(out: Path, metrics: EclekticMetrics, examples: pa.Table, judges: JudgesSummary | None) -> None:
    """metrics.json, examples.parquet and (for judged runs) judges.json into `out`."""
    write_table(out / EXAMPLES_FILE, examples)
    if judges is not None:
        atomic_write_json(out / JUDGES_FILE, judges.model_dump(mode="json"))
    atomic_write_json(out / METRICS_FILE, metrics.model_dump(mode="json"))


def write_outputs(out: Path, eclektic_set: EclekticSet, answers: pa.Table, judgements: pa.Table,
                  metrics: EclekticMetrics, score: Callable[[pa.Table], EclekticMetrics]) -> None:
    """Everything a scored run writes (see the module docstring); metrics.json last."""
    write_scores(out, metrics, examples_table(majority_vote(judgements), answers, eclektic_set),
                 judges_summary(judgements, score))
