"""Human evaluation sheets: export with the Appendix A.6 rubrics, validate and average the filled sheet."""

from __future__ import annotations

import csv

import pytest

from crossknow.adaxeval.annotate import RUBRICS, export_sheet, rubric_path, score_columns, score_sheet
from crossknow.errors import CrossknowError, InputError


def _rows(sheet):
    with open(sheet, encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def _save(sheet, rows):
    with open(sheet, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


@pytest.fixture
def sheet(run_fake, tmp_path):
    run_fake()
    path = tmp_path / "sheet.csv"
    assert export_sheet(tmp_path / "run", 3, 0, path) == {"en": 3, "ja": 3}
    return path


def test_export_draws_n_items_per_language_with_material_and_empty_scores(sheet, tmp_path):
    assert sheet.read_bytes().startswith(b"\xef\xbb\xbf")  # spreadsheet programs then read UTF-8
    rows = _rows(sheet)
    assert [r["lang"] for r in rows] == ["en"] * 3 + ["ja"] * 3
    first = rows[0]
    assert first["sentence"] and first["cloze"].count("[BLANK]") == 1 and " | " in first["triple"]
    assert first["partner_document"] and all(first[f"distractor_{k}"] for k in (1, 2, 3))
    assert all(first[column] == "" for column, _ in score_columns())
    rubrics = rubric_path(sheet).read_text(encoding="utf-8")
    assert all(f"`{r.column}` (0-{r.maximum})" in rubrics for r in RUBRICS)
    again = tmp_path / "again.csv"
    export_sheet(tmp_path / "run", 3, 0, again)
    assert again.read_bytes() == sheet.read_bytes()  # the draw is seeded
    export_sheet(tmp_path / "run", 3, 1, again)
    assert again.read_bytes() != sheet.read_bytes()


def test_scores_are_averaged_per_language_and_rubric(sheet):
    rows = _rows(sheet)
    for k, row in enumerate(rows):
        for column, rubric in score_columns():
            row[column] = str(rubric.maximum if row["lang"] == "en" else k % 2)
    rows[0]["paraphrase_diversity"] = ""  # not annotated: left out of the mean
    _save(sheet, rows)
    table = score_sheet(sheet)
    assert table.langs == ["en", "ja"] and table.items == {"en": 3, "ja": 3}
    assert table.means["cloze_faithfulness"] == {"en": 3.0, "ja": 0.67}
    assert table.means["triple_in_language"]["en"] == 2.0
    assert table.counts["paraphrase_diversity"] == {"en": 2, "ja": 3}
    assert table.counts["distractor_plausibility_cloze"] == {"en": 9, "ja": 9}  # three per item
    assert table.counts["distractor_plausibility"] == {"en": 18, "ja": 18}  # both prompts together


def test_distractors_are_scored_for_the_cloze_and_for_the_question(sheet):
    header = list(_rows(sheet)[0])
    for aspect in ("plausibility", "incorrectness"):
        for prompt in ("cloze", "question"):
            assert [f"distractor_{k}_{aspect}_{prompt}" for k in (1, 2, 3)] == [
                c for c in header if c.startswith("distractor_") and c.endswith(f"{aspect}_{prompt}")]
    rows = _rows(sheet)
    for row in rows:  # in the cloze every distractor is convincing (3), as an answer to the question barely (1)
        for k in (1, 2, 3):
            row[f"distractor_{k}_plausibility_cloze"] = "3"
            row[f"distractor_{k}_plausibility_question"] = "1"
    rows[0]["distractor_1_plausibility_question"] = ""  # en: 3 x 3 cloze scores of 3, 8 question scores of 1
    _save(sheet, rows)
    table = score_sheet(sheet)
    assert table.means["distractor_plausibility_cloze"] == {"en": 3.0, "ja": 3.0}
    assert table.means["distractor_plausibility_question"] == {"en": 1.0, "ja": 1.0}
    assert table.means["distractor_plausibility"] == {"en": round((9 * 3 + 8 * 1) / 17, 2), "ja": 2.0}
    assert table.means["distractor_incorrectness"] == {"en": None, "ja": None}


def test_bad_scores_name_the_row_and_column(sheet):
    rows = _rows(sheet)
    rows[1]["cloze_faithfulness"] = "4"
    rows[4]["triple_cross_language"] = "3"
    rows[5]["distractor_2_incorrectness_question"] = "2.5"
    _save(sheet, rows)
    with pytest.raises(InputError) as caught:
        score_sheet(sheet)
    message = str(caught.value)
    assert str(sheet) in message
    expected = f"row 2 (item {rows[1]['item_id']}), column 'cloze_faithfulness': '4' is not a whole number from 0 to 3"
    assert expected in message
    assert "row 5" in message and "column 'triple_cross_language': '3'" in message and "from 0 to 2" in message
    assert "row 6" in message and "'2.5'" in message


def test_missing_columns_and_runs_without_items(sheet, tmp_path):
    rows = [{k: v for k, v in row.items() if k != "cloze_factuality"} for row in _rows(sheet)]
    _save(sheet, rows)
    with pytest.raises(InputError, match="missing column.*cloze_factuality"):
        score_sheet(sheet)
    with pytest.raises(CrossknowError, match="not a generation run directory"):
        export_sheet(tmp_path / "nowhere", 3, 0, tmp_path / "x.csv")


def test_a_digit_that_is_no_whole_number_is_a_bad_score(sheet):
    rows = _rows(sheet)
    rows[0]["cloze_faithfulness"] = "²"  # str.isdigit() is true, int() refuses it
    _save(sheet, rows)
    with pytest.raises(InputError, match=r"row 1 .*column 'cloze_faithfulness': '²' is not a whole number"):
        score_sheet(sheet)


def test_a_cell_over_the_csv_field_limit_names_the_line(sheet):
    rows = _rows(sheet)
    rows[1]["notes"] = "x" * 200_000
    _save(sheet, rows)
    with pytest.raises(InputError, match="field larger than field limit") as caught:
        score_sheet(sheet)
    assert caught.value.path == str(sheet) and caught.value.line == 3
