"""ECLEKTIC's metrics (section 3.2), with intervals and per source x target matrices.

S = 1 when a question is answered correctly in both the target and the source language; overall success is the mean
of S over the examples, transfer the mean over K, those answered correctly in the source language. Which rows are
examples (`source_rows`: "exclude", the default, "include", "helm"), the intervals ("normal", "bootstrap") and the
recomputation of Table 2 behind the default are crossknow's choices, in docs/eclektic.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
import pyarrow as pa
from pydantic import Field

from crossknow.data.eclektic import LANGUAGES
from crossknow.data.jsonl import iter_json_lines, require
from crossknow.data.schemas import LANGUAGE_TAG, Record
from crossknow.eclektic.judge import CORRECTNESS_SCHEMA
from crossknow.errors import InputError

SourceRows = Literal["include", "exclude", "helm"]
Interval = Literal["normal", "bootstrap"]
METRICS = ("overall", "transfer")
_READINGS: dict[str, tuple[bool, bool]] = {"include": (True, True), "exclude": (False, False), "helm": (False, True)}
"""source_rows -> (source rows in overall, source rows in transfer)."""


class Estimate(Record):
    """A metric's value with its interval, as fractions in [0, 1]."""

    value: float | None = Field(description="The mean of S over the denominator's examples; null when it is 0.")
    half_width: float | None = Field(description="Half the interval's width (the +- of the paper's tables).")
    low: float | None = Field(description="The interval's lower end (normal: value - half_width).")
    high: float | None = Field(description="The interval's upper end (normal: value + half_width).")
    numerator: int = Field(description="Examples with S = 1.")
    n: int = Field(description="The denominator: valid examples (overall) or |K| (transfer).")


class MatrixCell(Record):
    """One (source language, target language) cell of a metric's matrix."""

    source_lang: str = Field(description="The questions' source language (a row of the heatmap).")
    target_lang: str = Field(description="The language asked in (a column); equal to source_lang on the diagonal.")
    numerator: int = Field(description="Valid examples of the cell with S = 1.")
    denominator: int = Field(description="Valid examples of the cell (overall) or those in K (transfer).")
    value: float | None = Field(description="numerator / denominator; null when the denominator is 0.")


class EclekticMetrics(Record):
    """The metrics of one correctness table (metrics.json)."""

    source_rows: SourceRows = Field(description="Which rows are examples: include, exclude or helm (module doc).")
    ci: Interval = Field(description="Interval method: normal approximation or bootstrap over questions.")
    confidence: float = Field(description="The intervals' confidence level, e.g. 0.95.")
    n_boot: int | None = Field(description="Bootstrap replicates (null for the normal approximation).")
    seed: int | None = Field(description="Seed of the bootstrap (null for the normal approximation).")
    overall: Estimate = Field(description="Overall success, ECLEKTIC's main metric.")
    transfer: Estimate = Field(description="Transfer score: success among examples whose source was answered right.")
    n_questions: int = Field(description="Questions in the table.")
    n_samples: int = Field(description="Distinct sample indices in the table (answers drawn per question row).")
    n_rows: int = Field(description="(question, language, sample) rows of the table, source rows included.")
    n_invalid: int = Field(description="Rows excluded because their or their source's correctness is null.")
    n_missing_source: int = Field(description="Rows excluded because their question has no source row for the sample.")
    matrices: dict[str, list[MatrixCell]] = Field(description="'overall' and 'transfer': source x target cells.")

    def grid(self, metric: str) -> tuple[list[str], list[list[float | None]]]:
        """(languages, values[source][target]) of a metric's matrix, ECLEKTIC's languages first."""
        cells = {(cell.source_lang, cell.target_lang): cell.value for cell in self.matrices[metric]}
        present = {lang for pair in cells for lang in pair}
        langs = [lang for lang in LANGUAGES if lang in present] + sorted(present - set(LANGUAGES))
        return langs, [[cells.get((source, target)) for target in langs] for source in langs]


def format_estimate(estimate: Estimate) -> str:
    """As the paper's tables print it, in percent: '41.6±1.5' ('n/a' without a value)."""
    if estimate.value is None:
        return "n/a"
    return f"{100 * estimate.value:.1f}±{100 * (estimate.half_width or 0.0):.1f}"


def z_value(confidence: float) -> float:
    """The two-sided standard-normal quantile of a confidence level (1.96 for 0.95)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def normal_half_width(p: float, n: int, confidence: float = 0.95) -> float:
    """z x sqrt(p(1-p)/n): the normal approximation's half-width for a proportion p of n."""
    return z_value(confidence) * (p * (1 - p) / n) ** 0.5


def eclektic_metrics(
    correctness: pa.Table | Iterable[Mapping[str, Any]],
    *,
    source_rows: SourceRows = "exclude",
    ci: Interval = "normal",
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> EclekticMetrics:
    """Overall success, transfer score and their matrices from a correctness table (columns q_id,
    source_lang, lang, correct, and optionally sample: 0 when absent); see the module docstring.

    Raises ValueError for a repeated (q_id, lang, sample), a question with two source languages, or
    a `correct` that is neither true, false nor null.
    """
    if source_rows not in _READINGS:
        raise ValueError(f"source_rows must be one of {sorted(_READINGS)}, got {source_rows!r}")
    z = z_value(confidence)
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    table, sources = _index(correctness)
    overall_sources, transfer_sources = _READINGS[source_rows]
    sums: dict[str, np.ndarray] = {q_id: np.zeros(4, dtype=np.int64) for q_id in sources}
    cells: dict[str, dict[tuple[str, str], list[int]]] = {name: defaultdict(lambda: [0, 0]) for name in METRICS}
    n_invalid = n_missing = 0
    for (q_id, lang, sample), correct in table.items():
        source_lang = sources[q_id]
        if (q_id, source_lang, sample) not in table:
            n_missing += 1
            continue
        source = table[(q_id, source_lang, sample)]
        if correct is None or source is None:
            n_invalid += 1
            continue
        success = int(correct and source)
        is_source = lang == source_lang
        in_overall = int(overall_sources or not is_source)
        in_transfer = int(source and (transfer_sources or not is_source))
        sums[q_id] += (success * in_overall, in_overall, success * in_transfer, in_transfer)
        for name in METRICS if source else METRICS[:1]:
            cell = cells[name][(source_lang, lang)]
            cell[0] += success
            cell[1] += 1
    per_question = np.array(list(sums.values()), dtype=np.int64).reshape(-1, 4)
    if ci == "normal":
        overall, transfer = (_normal(per_question[:, k], per_question[:, k + 1], z) for k in (0, 2))
    elif ci == "bootstrap":
        overall, transfer = _bootstrap(per_question, confidence, n_boot, seed)
    else:
        raise ValueError(f"ci must be 'normal' or 'bootstrap', got {ci!r}")
    return EclekticMetrics(
        source_rows=source_rows,
        ci=ci,
        confidence=confidence,
        n_boot=n_boot if ci == "bootstrap" else None,
        seed=seed if ci == "bootstrap" else None,
        overall=overall,
        transfer=transfer,
        n_questions=len(sources),
        n_samples=len({sample for _, _, sample in table}),
        n_rows=len(table),
        n_invalid=n_invalid,
        n_missing_source=n_missing,
        matrices={
            name: [
                MatrixCell(source_lang=s, target_lang=t, numerator=num, denominator=den, value=num / den)
                for (s, t), (num, den) in sorted(cells[name].items())
            ]
            for name in METRICS
        },
    )


def _index(correctness: pa.Table | Iterable[Mapping[str, Any]]) -> tuple[dict[tuple, bool | None], dict[str, str]]:
    """(q_id, lang, sample) -> correct, and q_id -> source language, checked."""
    rows = correctness.to_pylist() if isinstance(correctness, pa.Table) else correctness
    table: dict[tuple[str, str, int], bool | None] = {}
    sources: dict[str, str] = {}
    for index, row in enumerate(rows):
        missing = [column for column in ("q_id", "source_lang", "lang", "correct") if column not in row]
        if missing:
            raise ValueError(f"row {index}: the correctness table has no column {', '.join(missing)}")
        q_id, lang, sample, correct = str(row["q_id"]), row["lang"], row.get("sample") or 0, row["correct"]
        if correct is not None and not isinstance(correct, bool | np.bool_):
            raise ValueError(f"row {index}: correct must be true, false or null, got {correct!r}")
        if sources.setdefault(q_id, row["source_lang"]) != row["source_lang"]:
            raise ValueError(f"row {index}: question {q_id!r} has source languages {sources[q_id]!r} and "
                             f"{row['source_lang']!r}")
        if (q_id, lang, sample) in table:
            raise ValueError(f"row {index}: a second row for question {q_id!r} in {lang!r}, sample {sample}")
        table[(q_id, lang, sample)] = None if correct is None else bool(correct)
    return table, sources


def _estimate(numerator: int, n: int, half_width: float | None, low: float | None, high: float | None) -> Estimate:
    return Estimate(
        value=numerator / n if n else None, half_width=half_width, low=low, high=high, numerator=numerator, n=n
    )


def _normal(numerators: np.ndarray, denominators: np.ndarray, z: float) -> Estimate:
    numerator, n = int(numerators.sum()), int(denominators.sum())
    if not n:
        return _estimate(0, 0, None, None, None)
    p = numerator / n
    half = z * (p * (1 - p) / n) ** 0.5
    return _estimate(numerator, n, half, p - half, p + half)


def _bootstrap(per_question: np.ndarray, confidence: float, n_boot: int, seed: int) -> tuple[Estimate, Estimate]:
    """Percentile intervals of both metrics from the same resamples of the questions."""
    n_questions = len(per_question)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(n_questions, np.full(n_questions, 1 / n_questions), size=n_boot) if n_questions else None
    estimates = []
    for k in (0, 2):
        numerator, n = int(per_question[:, k].sum()), int(per_question[:, k + 1].sum())
        if not n or counts is None:
            estimates.append(_estimate(numerator, n, None, None, None))
            continue
        nums, dens = counts @ per_question[:, k], counts @ per_question[:, k + 1]
        ratios = nums[dens > 0] / dens[dens > 0]
        low, high = (float(x) for x in np.quantile(ratios, [0.5 - confidence / 2, 0.5 + confidence / 2]))
        estimates.append(_estimate(numerator, n, (high - low) / 2, low, high))
    return estimates[0], estimates[1]


def read_judgement_file(path: str | Path) -> pa.Table:
    """A correctness table from a JSONL of judgements made elsewhere: one object a line with
    `q_id` (string or integer), `source_lang`, `target_lang`, `correct` (true, false or null =
    invalid; the field must be present) and optionally `sample` (integer >= 0, default 0).

    Raises InputError naming the file, line and field for a missing or mistyped field, a language
    that is not a tag, a repeated (q_id, target_lang, sample), or a q_id given two source languages.
    `n_judges` and `n_valid` are null: the file does not say.
    """
    rows: list[dict[str, Any]] = []
    first: dict[tuple[str, str, int], int] = {}
    sources: dict[str, tuple[str, int]] = {}
    for line, record in iter_json_lines(path):
        q_id = str(require(record, "q_id", (str, int), path, line))
        langs = [require(record, name, str, path, line) for name in ("source_lang", "target_lang")]
        for name, lang in zip(("source_lang", "target_lang"), langs, strict=True):
            if not LANGUAGE_TAG.match(lang):
                raise InputError(path, f"{lang!r} is not a language tag", line=line, field=name)
        if "correct" not in record:
            raise InputError(path, "missing (required; null marks an invalid judgement)", line=line, field="correct")
        correct = require(record, "correct", bool, path, line, optional=True)
        sample = require(record, "sample", int, path, line, optional=True) or 0
        if sample < 0:
            raise InputError(path, f"must be >= 0, got {sample}", line=line, field="sample")
        source_lang, source_line = sources.setdefault(q_id, (langs[0], line))
        if source_lang != langs[0]:
            message = f"q_id {q_id!r} has source_lang {source_lang!r} on line {source_line}"
            raise InputError(path, message, line=line, field="source_lang")
        key = (q_id, langs[1], sample)
        if key in first:
            message = f"a second judgement of q_id {q_id!r} in {langs[1]!r}, sample {sample} (line {first[key]})"
            raise InputError(path, message, line=line, field="target_lang")
        first[key] = line
        rows.append({"q_id": q_id, "source_lang": langs[0], "lang": langs[1], "sample": sample, "correct": correct,
                     "n_judges": None, "n_valid": None})
    return pa.Table.from_pylist(rows, schema=CORRECTNESS_SCHEMA)
