"""`crossknow compare` on trace run directories: labels from the training configs, the report's tables equal to
the hand-computed numbers of tests/dynamics/test_recipe_comparison.py, the finding first and the runs' configs
collapsed, clear errors for bad input; and a comparison of the real tiny trace with a shorter copy of it."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from crossknow.cli.app import app
from crossknow.dynamics.comparison_records import RecipeComparisonSummary
from crossknow.errors import CrossknowError
from crossknow.report.comparison_report import COMPARISON_FILE, FIGURES, compare_runs, read_runs, training_config
from tests.cli.in_process import user_error
from tests.dynamics.test_recipe_comparison import recipe_traces
from tests.report.parse import parse_report
from tests.report.test_report_layout import collapsed_ids, position

TRANSFER = {"mono": "none", "trans": "translation", "roman": "romanisation"}


def write_run(directory: Path, trace: pd.DataFrame, transfer: str | None, **trace_config) -> Path:
    """A trace run directory: trace.parquet, the trace's config.yaml and (when `transfer` is set) the training
    run's config copied as train_config.yaml, as `crossknow trace` leaves them."""
    directory.mkdir(parents=True)
    trace.to_parquet(directory / "trace.parquet")
    config = {"checkpoints": ["somewhere"], "data": ["items.jsonl"], "train_lang": "en", "rule": "adaxeval",
              "boundary": "moved", **trace_config}
    (directory / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    if transfer is not None:
        train = {"model": "default", "corpus": "c.jsonl", "langs": ["en"], "recipe": "documents",
                 "transfer_recipe": transfer}
        (directory / "train_config.yaml").write_text(yaml.safe_dump(train), encoding="utf-8")
    return directory


@pytest.fixture(scope="module")
def run_dirs(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("recipes")
    return [write_run(root / f"run-{label}", trace, TRANSFER[label]) for label, trace in recipe_traces().items()]


@pytest.fixture(scope="module")
def compared(run_dirs, tmp_path_factory):
    out = tmp_path_factory.mktemp("compare")
    path, comparison = compare_runs(run_dirs, out)
    return out, path.read_text(encoding="utf-8"), comparison


def number(text: str) -> float:
    return float(text)


def test_labels_come_from_the_training_configs(compared):
    _, _, comparison = compared
    assert [run.label for run in comparison.runs] == ["monolingual", "translation", "romanisation"]
    assert [run.recipe for run in comparison.runs] == ["monolingual", "translation", "romanisation"]


def test_best_and_final_tables_equal_the_hand_computation(compared):
    _, text, _ = compared
    report = parse_report(text)
    best = report.tables["table-best"]
    assert best.headers == ["condition", "best recipe", "final accuracy", "vs monolingual"]
    assert best.rows == [["memorisation", "monolingual = romanisation", "1.0000", "0.0000"],
                         ["interlingual", "translation", "1.0000", "0.5000"]]
    final = report.tables["table-final"]
    rows = {(row[0], row[1]): dict(zip(final.headers, row, strict=True)) for row in final.rows}
    # hand computation in tests/dynamics/test_recipe_comparison.py: roman's interlingual i1 wrong throughout,
    # i2 right then wrong; loss ratio at step 40 = (3 + 3) / (4 + 5)
    roman = rows[("interlingual", "romanisation")]
    assert roman["steps"] == "0 → 40" and roman["accuracy"] == "0.500 → 0.000"
    assert number(roman["final accuracy"]) == 0.0 and number(roman["vs monolingual"]) == pytest.approx(-0.5)
    assert number(roman["final loss ratio"]) == pytest.approx(6 / 9, abs=5e-5)
    assert (roman["forgotten"], roman["overfitting onset"]) == ("1", "0")
    assert rows[("memorisation", "translation")]["acquired"] == "1"
    assert number(rows[("memorisation", "translation")]["final loss ratio"]) == pytest.approx(0.5, abs=5e-5)
    assert rows[("memorisation", "monolingual")]["overfitting onset"] == "—"
    assert [key[0] for key in rows] == ["memorisation"] * 3 + ["interlingual"] * 3


def test_the_finding_comes_first_and_the_configs_are_collapsed(compared):
    _, text, _ = compared
    assert position(text, 'id="table-best"') < position(text, 'id="table-final"') < position(text, "<img")
    assert "Best final accuracy per condition, 3 runs on 4 shared items: memorisation: monolingual = romanisation " \
           "1.000 (the reference); interlingual: translation 1.000 (+0.500 vs monolingual)." in text
    hidden = collapsed_ids(text)
    assert {"table-runs", "table-curves", "table-meta-0", "table-meta-1", "table-meta-2"} <= hidden
    assert {"table-best", "table-final"}.isdisjoint(hidden)


def test_figures_and_record(compared):
    out, text, _ = compared
    report = parse_report(text)
    assert set(report.figures) == {f"fig-{name}" for name in FIGURES}
    for name in FIGURES:
        png = base64.b64decode(report.figures[f"fig-{name}"].split(",", 1)[1])
        assert (out / "figures" / f"{name}.png").read_bytes() == png
    record = RecipeComparisonSummary.model_validate(json.loads((out / COMPARISON_FILE).read_text(encoding="utf-8")))
    assert [run.trace_sha256 for run in record.runs] == [run.trace_sha256 for run in record.runs if run.trace_sha256]
    assert len({run.trace_sha256 for run in record.runs}) == 3


def test_labels_given_and_default_labels_that_collide(run_dirs, tmp_path):
    runs = read_runs(run_dirs[:2], labels=["A", "B"])
    assert [run.label for run in runs] == ["A", "B"]
    twin = write_run(tmp_path / "second-mono", recipe_traces()["mono"], "none")
    assert [run.label for run in read_runs([run_dirs[0], twin])] == ["monolingual (run-mono)",
                                                                      "monolingual (second-mono)"]
    no_training = write_run(tmp_path / "plain", recipe_traces()["trans"], None)
    assert training_config(no_training) is None
    assert read_runs([run_dirs[0], no_training])[1].label == "plain"


def test_the_training_config_is_found_through_the_traces_checkpoint_sources(tmp_path):
    train = tmp_path / "train"
    (train / "checkpoints").mkdir(parents=True)
    (train / "config.yaml").write_text(yaml.safe_dump({"recipe": "documents", "transfer_recipe": "roman2en"}),
                                       encoding="utf-8")
    run = write_run(tmp_path / "trace", recipe_traces()["mono"], None, checkpoints=[f"0={train}", str(train)])
    assert training_config(run) == {"recipe": "documents", "transfer_recipe": "roman2en"}


def test_bad_input_is_refused(run_dirs, tmp_path):
    with pytest.raises(CrossknowError, match="has no trace.parquet"):
        read_runs([run_dirs[0], tmp_path])
    with pytest.raises(CrossknowError, match="no such directory"):
        read_runs([run_dirs[0], tmp_path / "absent"])
    with pytest.raises(CrossknowError, match="2 --label values for 3 runs"):
        read_runs(run_dirs, labels=["a", "b"])
    with pytest.raises(CrossknowError, match="more than once"):
        read_runs([run_dirs[0], run_dirs[1], run_dirs[0]])
    literal = write_run(tmp_path / "literal", recipe_traces()["trans"], "translation", boundary="literal")
    with pytest.raises(CrossknowError, match="different 'boundary' settings"):
        read_runs([run_dirs[0], literal])


def test_the_command(run_dirs, tmp_path):
    result = CliRunner().invoke(app, ["compare", *map(str, run_dirs[:2]), "--label", "base", "--label", "mt",
                                      "--out", str(tmp_path / "cmp"), "--x", "progress"])
    assert result.exit_code == 0, result.output
    assert "interlingual" in result.output and "mt" in result.output
    assert (tmp_path / "cmp" / "report.html").is_file()


def test_the_command_names_a_directory_that_is_not_a_trace_run(run_dirs, tmp_path, monkeypatch, capsys):
    stderr = user_error(monkeypatch, capsys, tmp_path, "compare", str(run_dirs[0]), str(tmp_path), "--out",
                        str(tmp_path / "out"))
    assert f"{tmp_path} has no trace.parquet" in stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_the_real_tiny_trace_against_a_shorter_copy(tiny_trace_run, tmp_path):
    """The tiny trace (steps 0, 2, 4; its label from the training run its config names) against a copy cut at
    step 2 that lacks one item: the comparison runs on the shared items, and the final accuracies equal a
    plain recomputation (an item is right when its answer has the strictly lowest loss, ties to the lower
    option) from the trace rows."""
    trace = pd.read_parquet(tiny_trace_run.out / "trace.parquet")
    dropped = trace["item_id"].iloc[0]
    short = trace[(trace["step"] <= 2) & (trace["item_id"] != dropped)]
    copy = write_run(tmp_path / "short", short, None)
    (copy / "config.yaml").write_text((tiny_trace_run.out / "config.yaml").read_text(encoding="utf-8"),
                                      encoding="utf-8")
    _, comparison = compare_runs([tiny_trace_run.out, copy], tmp_path / "out")
    assert [run.label for run in comparison.runs] == ["monolingual (run)", "monolingual (short)"]
    assert comparison.left_out == [1, 0] and len(comparison.notes) == 1
    shared = trace[trace["item_id"] != dropped]
    for label, rows in (("monolingual (run)", shared[shared["step"] == 4]), ("monolingual (short)",
                                                                             shared[shared["step"] == 2])):
        right: dict[str, list[bool]] = {}
        for (_, _), item in rows.groupby(["set", "item_id"]):
            best = min(zip(item["loss"], item["option_index"], strict=True))[1]
            answer = int(item.loc[item["is_answer"], "option_index"].iloc[0])
            right.setdefault(item["condition"].iloc[0], []).append(best == answer)
        final = comparison.final[comparison.final["label"] == label].set_index("condition")["accuracy_last"]
        assert final.to_dict() == pytest.approx({c: sum(v) / len(v) for c, v in right.items()})
