"""ECLEKTIC's figures and reports: the paper's Figure 5 redrawn, a hand-computed run report, the leaderboard."""

from __future__ import annotations

import base64
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest

from crossknow.eclektic.metrics import eclektic_metrics
from crossknow.report.eclektic_figures import (
    PAPER_ORDER,
    language_order,
    macro_means,
    matrix_grid,
    matrix_heatmap,
    scaling_figure,
)
from crossknow.report.eclektic_report import (
    LEADERBOARD_FILE,
    REPORT_FILE,
    ModelResult,
    eclektic_report,
    leaderboard_report,
)
from tests.eclektic.figure_5 import FIGURE_5, FIGURE_5_MEANS, TABLE_1
from tests.report.parse import parse_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

def figure_5_cells() -> pd.DataFrame:
    return pd.DataFrame([(source, target, numerators[j], TABLE_1[source])
                         for target, numerators in FIGURE_5.items() for j, source in enumerate(PAPER_ORDER)],
                        columns=["source_lang", "target_lang", "numerator", "denominator"])


def test_figure_5_column_means_are_the_papers_bottom_row():
    """The macro mean of each column reproduces the paper's printed row to its 0.1-point rounding (the Italian
    column, 146/348 = 41.95%, is printed 41.9: hence 0.06)."""
    cells = figure_5_cells()
    _, _, values = matrix_grid(cells, list(PAPER_ORDER), list(PAPER_ORDER))
    assert 100 * macro_means(values, axis=0) == pytest.approx(FIGURE_5_MEANS, abs=0.06)
    assert values[0, 0] == 6 / 16 and values[PAPER_ORDER.index("en"), PAPER_ORDER.index("hi")] == 36 / 64


def test_heatmap_cells_read_as_the_papers():
    """Rows are targets and columns sources in the paper's order; a cell reads '37.5%' over '6/16'; the mean
    strips follow; the colour scale is fixed at 0-100% with blue at the top."""
    figure = matrix_heatmap(figure_5_cells(), "overall")
    main = figure.axes[0]
    assert [t.get_text() for t in main.get_yticklabels()] == list(PAPER_ORDER)
    assert [t.get_text() for t in main.get_xticklabels()] == list(PAPER_ORDER)
    texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text() for t in main.texts}
    assert texts[(0, 0)] == "37.5%\n6/16"  # target de, source de
    assert texts[(PAPER_ORDER.index("hi"), PAPER_ORDER.index("hi"))] == "70.3%\n45/64"
    assert len(texts) == 144
    image = main.images[0]
    assert (image.norm.vmin, image.norm.vmax) == (0.0, 1.0)
    red, _, blue, _ = image.cmap(1.0)
    assert blue > 0.2 > red and image.cmap(0.0)[0] > image.cmap(0.0)[2]
    bottom = figure.axes[2]
    assert [t.get_text() for t in bottom.texts][:2] == ["30.2%", "60.3%"]


def test_heatmap_leaves_a_cell_without_example_empty():
    cells = pd.DataFrame([("en", "en", 3, 4), ("en", "ja", 1, 4), ("ja", "ja", 2, 2)],
                         columns=["source_lang", "target_lang", "numerator", "denominator"])
    main = matrix_heatmap(cells, "transfer").axes[0]
    assert [t.get_text() for t in main.get_xticklabels()] == ["en", "ja"]
    assert [t.get_text() for t in main.get_yticklabels()] == ["en", "ja"]
    assert sorted(t.get_text() for t in main.texts) == ["100.0%\n2/2", "25.0%\n1/4", "75.0%\n3/4"]
    mask = np.ma.getmaskarray(main.images[0].get_array())
    assert mask.tolist() == [[False, True], [False, False]]  # target en, source ja: no example


def test_transfer_strips_leave_out_the_diagonal():
    cells = pd.DataFrame([("en", "en", 3, 3), ("en", "ja", 1, 3), ("ja", "ja", 2, 2), ("ja", "en", 0, 2)],
                         columns=["source_lang", "target_lang", "numerator", "denominator"])
    with_diagonal = matrix_heatmap(cells, "transfer")
    without = matrix_heatmap(cells, "transfer", diagonal_in_means=False)
    assert [t.get_text() for t in with_diagonal.axes[2].texts] == ["66.7%", "50.0%"]  # (100 + 33.3) / 2, (0 + 100) / 2
    assert [t.get_text() for t in without.axes[2].texts] == ["33.3%", "0.0%"]  # the off-diagonal cell alone


def test_language_order_puts_unknown_languages_last():
    assert language_order(["zh", "sw", "en", "de", "am"]) == ["de", "en", "zh", "am", "sw"]


def test_scaling_figure_needs_two_counted_models():
    points = pd.DataFrame({"model": ["a", "b", "c"], "params": [5e8, 7e9, None], "overall": [0.01, 0.03, 0.4],
                           "overall_half_width": [0.002, 0.005, 0.01], "transfer": [0.1, 0.23, 0.6],
                           "transfer_half_width": [0.03, 0.04, 0.02]})
    axes = scaling_figure(points).axes[0]
    assert axes.get_xscale() == "log"
    overall, transfer = (container.lines[0] for container in axes.containers)
    assert list(overall.get_xdata()) == [5e8, 7e9] and list(transfer.get_ydata()) == pytest.approx([10, 23])
    assert [t.get_text() for t in axes.get_xticklabels()] == ["500M", "7B"]
    lonely = scaling_figure(points.iloc[[0, 2]]).axes[0]
    assert not lonely.lines and "two models" in lonely.texts[0].get_text()


def hand_table() -> list[dict]:
    """q1 (source en) right in en and de, wrong in ja; q2 (en) wrong in en; q3 (de) right in de and en, its ja
    judgement invalid. Source rows included: S = 1 for q1/en, q1/de, q3/de, q3/en: overall 4/8; K holds q1's
    three rows and q3's two valid rows: transfer 4/5; one invalid example."""
    rows = [("q1", "en", "en", True), ("q1", "en", "de", True), ("q1", "en", "ja", False),
            ("q2", "en", "en", False), ("q2", "en", "de", True), ("q2", "en", "ja", True),
            ("q3", "de", "de", True), ("q3", "de", "en", True), ("q3", "de", "ja", None)]
    return [{"q_id": q, "source_lang": s, "lang": t, "correct": c} for q, s, t, c in rows]


@pytest.fixture(scope="module")
def run_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("eclektic-run")
    meta = {"model": "hf:org/model", "config": {"setting": "closed-book"}, "inputs": {"set.jsonl": "sha256:ab"}}
    path = eclektic_report(eclektic_metrics(hand_table(), source_rows="include"), out, model="hf:org/model", meta=meta)
    text = path.read_text(encoding="utf-8")
    return out, path, text, parse_report(text)


def test_summary_is_hand_computed(run_report):
    _, path, _, report = run_report
    z = NormalDist().inv_cdf(0.975)
    overall, transfer = 100 * z * (0.5 * 0.5 / 8) ** 0.5, 100 * z * (0.8 * 0.2 / 5) ** 0.5
    assert path.name == REPORT_FILE
    summary = report.tables["table-summary"]
    assert summary.rows == [["hf:org/model", f"50.0±{overall:.1f}", f"80.0±{transfer:.1f}", "8", "5", "1", "0"]]
    assert summary.headers[3:5] == ["n (examples)", "|K| (source correct)"]


def test_matrix_tables_are_hand_computed(run_report):
    _, _, _, report = run_report
    overall = report.tables["table-overall"]
    assert overall.headers == ["target \\ source", "de", "en", "mean"]
    assert overall.rows == [["de", "100.0% (1/1)", "50.0% (1/2)", "75.0%"],
                            ["en", "100.0% (1/1)", "50.0% (1/2)", "75.0%"],
                            ["ja", "—", "0.0% (0/2)", "0.0%"],
                            ["mean", "100.0%", "33.3%", "—"]]
    transfer = report.tables["table-transfer"]
    assert [row[1:3] for row in transfer.rows] == [["100.0% (1/1)", "100.0% (1/1)"], ["100.0% (1/1)", "100.0% (1/1)"],
                                                   ["—", "0.0% (0/1)"], ["100.0%", "50.0%"]]
    # the transfer means leave out the diagonal (100% by definition): source en is 1/1 in de, 0/1 in ja
    assert [row[-1] for row in transfer.rows[:3]] == ["100.0%", "100.0%", "0.0%"]


def test_report_leads_with_the_finding(run_report):
    """Summary, then both heatmaps, then the collapsed sections holding the numbers, config and definitions."""
    out, _, text, report = run_report
    positions = [text.index(marker) for marker in ('id="table-summary"', 'id="fig-transfer"', 'id="fig-overall"',
                                                   "<details>", 'id="table-overall"', 'id="table-meta"',
                                                   "overall success = mean of S")]
    assert positions == sorted(positions)
    assert "<details open" not in text and text.count("<details>") == 2
    assert "Overall success 50.0±" in text.split('id="table-summary"')[0]
    meta = {row[0]: row[1] for row in report.tables["table-meta"].rows}
    assert meta["model"] == "hf:org/model" and "sha256:ab" in meta["inputs"]
    for name in ("transfer", "overall"):
        png = base64.b64decode(report.figures[f"fig-{name}"].split(",", 1)[1])
        assert png.startswith(PNG_MAGIC) and (out / "figures" / f"{name}.png").read_bytes() == png
    assert report.scripts == 0 and all(source.startswith("data:") for source in report.sources)


def test_leaderboard_ranks_by_overall_and_plots_sizes(tmp_path):
    weak = eclektic_metrics([row | {"correct": row["correct"] and row["lang"] == row["source_lang"]}
                             for row in hand_table()], source_rows="include")
    strong = eclektic_metrics(hand_table(), source_rows="include")
    results = [ModelResult("small", weak, params=5e8, run="runs/small"),
               ModelResult("big", strong, params=7e9, run="runs/big")]
    path = leaderboard_report(results, tmp_path)
    report = parse_report(path.read_text(encoding="utf-8"))
    assert path.name == LEADERBOARD_FILE
    board = report.tables["table-leaderboard"]
    assert board.column("model") == ["big", "small"]
    # small: only source rows right: q1/en and q3/de give S = 1 of 8; K = 5 rows, transfer 2/5
    assert [cell.split("±")[0] for cell in board.rows[1][1:3]] == ["25.0", "40.0"]
    assert set(report.figures) == {"fig-scaling"} and (tmp_path / "figures" / "scaling.png").is_file()
    unsized = leaderboard_report([ModelResult("a", weak), ModelResult("b", strong)], tmp_path / "unsized")
    assert parse_report(unsized.read_text(encoding="utf-8")).figures == {}


def test_parse_params():
    from crossknow.errors import CrossknowError
    from crossknow.report.eclektic_runs import parse_params

    assert [parse_params(t) for t in ("7.6B", "270M", "1.5b", "7.6e9", "5k")] == [7.6e9, 2.7e8, 1.5e9, 7.6e9, 5e3]
    with pytest.raises(CrossknowError, match="--params 'seven'"):
        parse_params("seven")


def test_leaderboard_of_scored_run_directories(tmp_path):
    """Two run directories scored from judgement files, compared with labels and parameter counts given on the
    command line; a run's own report is rebuilt from its files."""
    import json

    from crossknow.eclektic.run import score_judgement_file
    from crossknow.eclektic.run_config import ScoreConfig
    from crossknow.report.eclektic_runs import leaderboard_of_runs, rebuild_eclektic_report

    runs = []
    for name, rows in (("weak", [r | {"correct": r["correct"] and r["lang"] == r["source_lang"]}
                                 for r in hand_table()]), ("strong", hand_table())):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"q_id": r["q_id"], "source_lang": r["source_lang"],
                                            "target_lang": r["lang"], "correct": r["correct"]}) + "\n"
                                for r in rows), encoding="utf-8")
        score_judgement_file(path, tmp_path / name, ScoreConfig())
        runs.append(tmp_path / name)
    report = parse_report(rebuild_eclektic_report(runs[1]).read_text(encoding="utf-8"))
    # the default reading, translated rows only: S = 1 for q1/de and q3/en of the 5 valid ones (q3/ja is invalid)
    assert report.tables["table-summary"].rows[0][1].startswith("40.0±")
    board = leaderboard_of_runs(runs, tmp_path / "board", labels=["0.5B model", "7B model"], params=["0.5B", "7B"])
    parsed = parse_report(board.read_text(encoding="utf-8"))
    assert parsed.tables["table-leaderboard"].column("model") == ["7B model", "0.5B model"]
    assert "fig-scaling" in parsed.figures
    assert parsed.tables["table-runs"].column("parameters") == ["500M", "7B"]


def test_a_mostly_invalid_judge_is_named_at_the_top(tmp_path):
    """Judge 'junk' answers nothing parseable on any row, 'recall' judges every row: the run's scores rest on
    recall alone, and the report's opening sentence says so before the scores."""
    import pyarrow as pa

    from crossknow.eclektic.judge import JUDGEMENT_SCHEMA, majority_vote
    from crossknow.eclektic.run_outputs import judges_summary, unreliable_judges

    rows = [{"q_id": r["q_id"], "lang": r["lang"], "source_lang": r["source_lang"], "sample": 0, "judge": judge,
             "verdict": r["correct"] if judge == "recall" else None, "raw": "", "error": None, "attempts": 1,
             "cached": False, "cost_usd": 0.0} for judge in ("recall", "openai:junk") for r in hand_table()]
    judgements = pa.Table.from_pylist(rows, schema=JUDGEMENT_SCHEMA)
    summary = judges_summary(judgements, lambda table: eclektic_metrics(majority_vote(table)))
    warnings = unreliable_judges(summary)
    assert warnings == ["judge openai:junk is invalid on 9 of 9 rows"]
    path = eclektic_report(eclektic_metrics(majority_vote(judgements)), tmp_path, model="m", warnings=warnings)
    lead = path.read_text(encoding="utf-8").split('id="table-summary"')[0]
    assert "Warning: judge openai:junk is invalid on 9 of 9 rows." in lead
    assert lead.index("Warning") < lead.index("Overall success")
