"""Human evaluation of a generated set (the paper's section 3.4 and Appendix A.6).

`export_sheet` writes N random kept items per language as a CSV sheet (UTF-8 with a byte-order mark, so that
spreadsheet programs show Japanese) with one empty column per score, and the rubrics beside it; `score_sheet`
reads the filled sheet back, validates every score and averages per language, like the paper's Table 2.
"""

from __future__ import annotations

import csv
import io
import random
from dataclasses import dataclass
from pathlib import Path

from crossknow.adaxeval.records import QualityRecord
from crossknow.adaxeval.stages import StageStore
from crossknow.data.corpus import pair_documents, read_corpus
from crossknow.data.guarded import load_yaml, parse_int, read_text
from crossknow.data.schemas import language_tag
from crossknow.errors import CrossknowError, InputError
from crossknow.store.atomic import atomic_write, atomic_write_text
from crossknow.store.run_dir import CONFIG_FILE, RunDir


@dataclass(frozen=True)
class Rubric:
    """One score column."""

    column: str
    label: str
    maximum: int
    guide: str


RUBRICS: tuple[Rubric, ...] = (
    Rubric("triple_in_language", "Triple (in-language)", 2,
           "2 subject, relation and object all faithful to the sentence, nothing added; 1 partly wrong, ambiguous or "
           "underspecified; 0 wrong or a different fact."),
    Rubric("triple_cross_language", "Triple (cross-language)", 2,
           "2 the same fact is stated in one or consecutive sentences of the other-language document; 1 inferable "
           "from the document as a whole without outside knowledge; 0 not supported or needs outside knowledge."),
    Rubric("cloze_faithfulness", "Cloze (faithfulness)", 3,
           "With [BLANK] filled by the answer: 3 mirrors the sentence's structure and meaning (surface changes only); "
           "2 core meaning kept, moderate rewording or harmless omissions; 1 differs a lot or misses key information; "
           "0 unrelated to the sentence."),
    Rubric("cloze_factuality", "Cloze (factual consistency)", 3,
           "3 fully consistent with the sentence and triple; 2 minor ambiguity; 1 some facts or relations altered or "
           "key context missing; 0 wrong or misleading."),
    Rubric("paraphrase_fluency", "Paraphrase (fluency)", 3,
           "3 natural, well-formed question; 2 minor grammatical issues; 1 understandable but ungrammatical or "
           "unnatural; 0 not a valid question."),
    Rubric("paraphrase_equivalence", "Paraphrase (equivalence)", 3,
           "3 asks for the same answer with no change of meaning; 2 minor differences; 1 some meaning lost, the answer "
           "may differ; 0 asks something else."),
    Rubric("paraphrase_diversity", "Paraphrase (diversity)", 3,
           "3 different vocabulary and structure; 2 some rewording, similar structure; 1 mostly the blank replaced by "
           "a question word; 0 the cloze with a question mark."),
    *(
        Rubric(f"distractor_plausibility_{prompt}", f"Distractor (plausibility, {prompt})", 3,
               f"Per distractor, as an answer to the {prompt}: 3 convincing even to experts; 2 fits the domain, ruled "
               "out by basic domain knowledge; 1 ruled out by surface cues or common sense; 0 irrelevant, nonsensical "
               "or ungrammatical.")
        for prompt in ("cloze", "question")
    ),
    *(
        Rubric(f"distractor_incorrectness_{prompt}", f"Distractor (incorrectness, {prompt})", 3,
               f"Per distractor, as an answer to the {prompt}: 3 contradicted or unsupported by the sentence; "
               "2 likely wrong but could be partly true; 1 possibly true; 0 actually correct (the answer).")
        for prompt in ("cloze", "question")
    ),
)
"""The rubrics of Appendix A.6, in the order of the paper's Table 2. Distractor scores are per distractor
and per prompt: A.6.4 asks for "evaluations for both the cloze prompt and the paraphrased question"."""

COMBINED: dict[str, tuple[str, tuple[str, ...]]] = {
    "distractor_plausibility": ("Distractor (plausibility), both prompts",
                                ("distractor_plausibility_cloze", "distractor_plausibility_question")),
    "distractor_incorrectness": ("Distractor (incorrectness), both prompts",
                                 ("distractor_incorrectness_cloze", "distractor_incorrectness_question")),
}
"""Rows of one number per distractor aspect, as in the paper's Table 2: the mean over every distractor
score of both prompts (crossknow's choice; the paper does not say how it combined the two)."""

N_DISTRACTORS = 3
MATERIAL = ("item_id", "lang", "sentence", "triple", "partner_document", "cloze", "answer", "question",
            "distractor_1", "distractor_2", "distractor_3")
"""The sheet's material columns, before the score columns."""


def score_columns() -> list[tuple[str, Rubric]]:
    """(column, rubric) for every score column of the sheet."""
    columns = []
    for rubric in RUBRICS:
        if rubric.column.startswith("distractor_"):
            aspect = rubric.column.removeprefix("distractor_")
            columns += [(f"distractor_{k}_{aspect}", rubric) for k in range(1, N_DISTRACTORS + 1)]
        else:
            columns.append((rubric.column, rubric))
    return columns


def rubric_markdown() -> str:
    """The rubrics as Markdown, written beside the sheet."""
    lines = ["# AdaXEval human evaluation rubrics (after the paper's Appendix A.6)", "",
             "Fill each score column with a whole number in its range; leave a cell empty to skip it.",
             "Score every distractor twice: in the cloze's [BLANK] (`..._cloze`) and as an answer to the "
             "paraphrased question (`..._question`).", ""]
    for rubric in RUBRICS:
        lines += [f"## {rubric.label}: `{rubric.column}` (0-{rubric.maximum})", "", rubric.guide, ""]
    return "\n".join(lines)


def export_sheet(run_dir: Path, n: int, seed: int, sheet: Path) -> dict[str, int]:
    """Write `sheet` (CSV) with up to `n` random kept items per language, and its rubric file beside it
    (`<sheet>.rubric.md`); return the items written per language."""
    config_path = run_dir / CONFIG_FILE
    if not config_path.exists():
        raise CrossknowError(f"{run_dir} is not a generation run directory (no {CONFIG_FILE})")
    config = load_yaml(config_path)
    store = StageStore("quality", RunDir(run_dir).stage("quality"), QualityRecord)
    kept = [row.record for row in store.rows() if row.status == "kept"]
    if not kept:
        raise CrossknowError(f"{run_dir}: the run has no kept items yet (run crossknow generate to the end first)")
    langs = config["langs"]
    pairs = pair_documents(read_corpus(config["corpus"]), langs).pairs
    header = [*MATERIAL, *(column for column, _ in score_columns()), "notes"]
    rows, written = [], {}
    for lang in langs:
        other = next(code for code in langs if code != lang)
        items = sorted((r for r in kept if r.item.query.fact.sentence.lang == lang),
                       key=lambda r: r.item.query.fact.sentence.id)
        chosen = random.Random(f"{seed}:{lang}:annotate").sample(items, min(n, len(items)))
        written[lang] = len(chosen)
        for record in sorted(chosen, key=lambda r: r.item.query.fact.sentence.id):
            query, sentence = record.item.query, record.item.query.fact.sentence
            triple = query.triple  # the regenerated triple the item was written from
            rows.append([
                sentence.id, lang, sentence.text,
                f"{triple.subject} | {triple.relation} | {triple.object}",
                pairs[sentence.pair_id][other].text, query.cloze, query.answer, query.question,
                *record.item.distractors, *([""] * (len(header) - len(MATERIAL))),
            ])

    def write(handle) -> None:
        handle.write("\ufeff")
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)

    atomic_write(sheet, write)
    atomic_write_text(rubric_path(sheet), rubric_markdown())
    return written


def rubric_path(sheet: Path) -> Path:
    """Where the rubrics of `sheet` are written."""
    return sheet.with_name(sheet.stem + ".rubric.md")


@dataclass
class ScoreTable:
    """Mean scores per rubric and language."""

    langs: list[str]
    means: dict[str, dict[str, float | None]]
    """means[rubric or COMBINED column][lang]; None where nothing was scored."""
    counts: dict[str, dict[str, int]]
    """counts[rubric or COMBINED column][lang]: scores averaged (per distractor for distractor rubrics)."""
    items: dict[str, int]
    """Rows of the sheet per language."""


def score_sheet(sheet: Path) -> ScoreTable:
    """Read a filled sheet, validate every score, and average per rubric and language.

    Raises InputError naming the row (1-based, header not counted), the item and the column of every
    bad cell (the first ten): a score out of range, an empty item id, a language that is no language tag,
    an item listed twice; or a missing column.
    """
    reader = csv.DictReader(io.StringIO(read_text(sheet), newline=""))
    try:
        table = list(reader)
    except csv.Error as error:
        raise InputError(sheet, f"not a CSV sheet: {error}", line=reader.reader.line_num) from None
    columns = score_columns()
    present = set(table[0]) if table else set()
    missing = [name for name in ("item_id", "lang", *(c for c, _ in columns)) if name not in present]
    if table and missing:
        raise InputError(sheet, f"missing column(s): {', '.join(missing)}")
    problems: list[str] = []
    values: dict[str, dict[str, list[int]]] = {rubric.column: {} for rubric in RUBRICS}
    items: dict[str, int] = {}
    first_row: dict[tuple[str, str], int] = {}
    for number, row in enumerate(table, start=1):
        lang = (row.get("lang") or "").strip()
        problem = _row_problem(row, lang, number, first_row)
        if problem:
            problems.append(problem)
            continue
        items[lang] = items.get(lang, 0) + 1
        for column, rubric in columns:
            cell = (row.get(column) or "").strip()
            if not cell:
                continue
            score = parse_int(cell)
            if score is None or not 0 <= score <= rubric.maximum:
                shown = repr(cell) if len(cell) <= 40 else f"{cell[:40]!r}... ({len(cell)} characters)"
                problems.append(
                    f"row {number} (item {row.get('item_id')}), column '{column}': {shown} is not a whole number "
                    f"from 0 to {rubric.maximum}"
                )
                continue
            values[rubric.column].setdefault(lang, []).append(score)
    if problems:
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        raise InputError(sheet, "; ".join(problems[:10]) + more)
    for column, (_, parts) in COMBINED.items():
        values[column] = {lang: [v for part in parts for v in values[part].get(lang, [])] for lang in items}
    langs = list(items)
    return ScoreTable(
        langs=langs,
        means={column: {lang: _mean(scores.get(lang, [])) for lang in langs} for column, scores in values.items()},
        counts={column: {lang: len(scores.get(lang, [])) for lang in langs} for column, scores in values.items()},
        items=items,
    )


def _row_problem(row: dict[str, str | None], lang: str, number: int, first_row: dict[tuple[str, str], int]) -> str:
    """Why a sheet row names no item of one language once ('' when it does); notes its (lang, item_id) in
    `first_row`, so that an item repeated in the sheet is refused rather than counted twice."""
    item_id = (row.get("item_id") or "").strip()
    if not item_id:
        return f"row {number}, column 'item_id': empty"
    try:
        language_tag(lang)
    except ValueError as error:
        return f"row {number} (item {item_id}), column 'lang': {error}"
    if (lang, item_id) in first_row:
        return f"row {number}, column 'item_id': item {item_id} ({lang}) repeats row {first_row[lang, item_id]}"
    first_row[lang, item_id] = number
    return ""


def _mean(scores: list[int]) -> float | None:
    return round(sum(scores) / len(scores), 2) if scores else None
