"""build_report on constructed traces: every figure present, every table equal to the analyses' numbers."""

from __future__ import annotations

import base64
import json
import shutil

import pandas as pd
import pytest

from crossknow.dynamics import (
    SHAPE_DEFINITIONS,
    SHAPES,
    TRANSITIONS,
    DynamicsSummary,
    accuracy_by_condition,
    classify_loss_shapes,
    correct_loss_by_condition,
    count_shapes,
    loss_ratio_by_condition,
    overfitting_onset,
    transition_counts,
)
from crossknow.report import DYNAMICS_FILE, FIGURES, build_report
from tests.dynamics.test_shapes import STEPS, loss_shielding, stable_gain, zig_zag
from tests.dynamics.traces import Item, build_trace, flat
from tests.report.parse import parse_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
META = {"model": "hf:org/model@rev", "data": {"cloze.jsonl": "sha256:abc"}, "seeds": {"train": 7},
        "config": {"epochs": 4, "lr": 1e-5}}


def run_trace() -> pd.DataFrame:
    """Five checkpoints, four conditions; interlingual has no acquired item (one retained, one unacquired)."""
    return build_trace(STEPS, [
        stable_gain(), loss_shielding(), zig_zag(),
        Item("kept", "interlingual", 0, [flat(1.0, 5), flat(2.0, 5)]),
        Item("never", "interlingual", 1, [[1.0, 1.1, 1.2, 1.3, 1.4], [2.0, 2.1, 2.3, 2.6, 3.0]]),
        Item("c1", "interlingual-cloze", 1, [flat(2.0, 5), [1.0, 1.5, 2.0, 2.5, 3.0], flat(3.0, 5)]),
    ])


def train_log() -> pd.DataFrame:
    steps = list(range(0, 401, 20))
    return pd.DataFrame({"step": steps, "loss": [3.0 - 0.01 * s + 0.000025 * s * s for s in steps],
                         "learning_rate": [1e-5] * len(steps)})


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    trace = run_trace()
    path = build_report(trace, out, train_log=train_log(), meta=META)
    return trace, out, path, parse_report(path.read_text(encoding="utf-8"))


def number(text: str) -> float | None:
    return None if text == "—" else float(text)


def test_every_figure_is_embedded_and_saved(built):
    _, out, path, report = built
    assert path == out / "report.html"
    assert set(report.figures) == {f"fig-{name}" for name in FIGURES}
    for name in FIGURES:
        source = report.figures[f"fig-{name}"]
        assert source.startswith("data:image/png;base64,")
        png = base64.b64decode(source.split(",", 1)[1])
        assert png.startswith(PNG_MAGIC)
        assert (out / "figures" / f"{name}.png").read_bytes() == png


def step_table_equals(table, frame: pd.DataFrame, column: str) -> None:
    conditions = table.headers[2:]
    assert table.column("step") == [str(s) for s in STEPS]
    assert table.column("checkpoint") == [f"ckpt/step-{s}" for s in STEPS]
    expected = frame.set_index(["step", "condition"])[column]
    for row in table.rows:
        for condition, text in zip(conditions, row[2:], strict=True):
            assert number(text) == pytest.approx(expected[(int(row[0]), condition)], abs=5e-5)
    assert sorted(conditions) == sorted(frame["condition"].unique())


def test_step_tables_equal_the_analyses(built):
    trace, _, _, report = built
    assert report.tables["table-accuracy"].headers[2:] == ["memorisation", "intralingual", "interlingual",
                                                           "interlingual-cloze"]
    step_table_equals(report.tables["table-accuracy"], accuracy_by_condition(trace), "accuracy")
    step_table_equals(report.tables["table-correct-loss"], correct_loss_by_condition(trace), "mean_correct_loss")
    step_table_equals(report.tables["table-loss-ratio"], loss_ratio_by_condition(trace), "loss_ratio")


def test_the_loss_ratio_is_shown_both_ways_with_its_definition(tmp_path):
    """Both aggregations of the loss ratio are in the report, computed by hand: item a has correct loss 1 of a
    total 1 + 3 = 4 (ratio 1/4), item b 6 of 6 + 2 = 8 (ratio 3/4): ratio of sums 7/12, mean of ratios 1/2."""
    from crossknow.dynamics.losses import LOSS_RATIO_DEFINITION

    trace = build_trace([0, 1], [Item("a", "memorisation", 0, [[1.0, 1.0], [3.0, 3.0]]),
                                 Item("b", "memorisation", 0, [[6.0, 6.0], [2.0, 2.0]])])
    report = parse_report(build_report(trace, tmp_path).read_text(encoding="utf-8"))
    assert [number(v) for v in report.tables["table-loss-ratio"].column("memorisation")] == pytest.approx(
        [7 / 12] * 2, abs=5e-5)
    assert [number(v) for v in report.tables["table-mean-item-ratio"].column("memorisation")] == pytest.approx(
        [0.5] * 2, abs=5e-5)
    assert LOSS_RATIO_DEFINITION in report.pres
    assert "ratio of sums" in LOSS_RATIO_DEFINITION and "mean of the per-item ratios" in LOSS_RATIO_DEFINITION


def test_count_tables_equal_the_analyses(built):
    trace, _, _, report = built
    transitions = report.tables["table-transitions"]
    assert transitions.headers == ["condition", "items", *TRANSITIONS]
    expected = transition_counts(trace).set_index("condition")
    for row in transitions.rows:
        assert [int(v) for v in row[1:]] == expected.loc[row[0], ["n_items", *TRANSITIONS]].tolist()
    assert len(transitions.rows) == len(expected)
    shapes = report.tables["table-shapes"]
    assert shapes.headers == ["condition", "acquired", *SHAPES]
    expected = count_shapes(classify_loss_shapes(trace), list(expected.index)).set_index("condition")
    assert {row[0]: [int(v) for v in row[1:]] for row in shapes.rows} == {
        c: expected.loc[c, ["n_acquired", *SHAPES]].tolist() for c in expected.index}
    assert shapes.column("acquired")[shapes.column("condition").index("interlingual")] == "0"


def test_onsets_and_examples(built):
    trace, _, _, report = built
    onsets = {(row[0], row[1]): number(row[2]) for row in report.tables["table-onsets"].rows}
    for condition, curve in correct_loss_by_condition(trace).groupby("condition"):
        assert onsets[("correct-loss", condition)] == overfitting_onset(curve["step"], curve["mean_correct_loss"])
    log = train_log()
    assert onsets[("train-loss", "—")] == overfitting_onset(log["step"], log["loss"]) == 200
    examples = {row[0]: row[1:4] for row in report.tables["table-shape-examples"].rows}
    assert examples == {"Stable-Gain": ["set-a", "sg", "memorisation"],
                        "Loss-Shielding": ["set-a", "ls", "memorisation"],
                        "Unstable": ["set-a", "zz", "intralingual"]}


def test_dynamics_json_holds_the_same_numbers(built):
    trace, out, _, _ = built
    record = DynamicsSummary.model_validate(json.loads((out / DYNAMICS_FILE).read_text(encoding="utf-8")))
    accuracy = accuracy_by_condition(trace)
    assert [(r.step, r.condition, r.n_items, r.n_correct) for r in record.accuracy] == list(
        accuracy[["step", "condition", "n_items", "n_correct"]].itertuples(index=False, name=None))
    ratios = loss_ratio_by_condition(trace)
    assert [r.loss_ratio for r in record.loss_ratio] == pytest.approx(ratios["loss_ratio"].tolist())
    shapes = classify_loss_shapes(trace)
    assert [(s.item_id, s.shape) for s in record.shapes] == list(zip(shapes["item_id"], shapes["shape"], strict=True))
    assert record.shape_definitions == SHAPE_DEFINITIONS


def test_header_shows_meta_and_definitions(built):
    _, _, _, report = built
    meta = {row[0]: row[1] for row in report.tables["table-meta"].rows}
    assert meta["model"] == "hf:org/model@rev"
    assert json.loads(meta["seeds"]) == {"train": 7} and json.loads(meta["data"]) == META["data"]
    assert SHAPE_DEFINITIONS in report.pres


def test_report_is_self_contained(built, tmp_path):
    _, out, path, report = built
    text = path.read_text(encoding="utf-8")
    assert report.scripts == 0 and "<link" not in text
    assert all(source.startswith("data:") for source in report.sources)
    assert all("://" not in link and not link.startswith("/") for link in report.links)
    assert str(out) not in text
    copy = tmp_path / "elsewhere"
    shutil.copytree(out, copy)
    for link in report.links:
        assert (copy / link).is_file()


def test_two_checkpoints_and_nothing_acquired(tmp_path):
    trace = build_trace([0, 10], [Item("kept", "memorisation", 0, [[1.0, 1.0], [2.0, 2.0]]),
                                  Item("q", "intralingual", 1, [[1.0, 1.0], [2.0, 2.0]])])
    report = parse_report(build_report(trace, tmp_path).read_text(encoding="utf-8"))
    assert set(report.figures) == {f"fig-{name}" for name in FIGURES if name != "train-loss"}
    assert [row[1:] for row in report.tables["table-shape-examples"].rows] == [["—"] * 6] * 3
    assert [row[1] for row in report.tables["table-shapes"].rows] == ["0", "0"]
    assert report.tables["table-transitions"].rows == [["memorisation", "1", "1", "0", "0", "0"],
                                                       ["intralingual", "1", "0", "0", "0", "1"]]


def test_one_checkpoint(tmp_path):
    trace = build_trace([0], [Item("a", "memorisation", 0, [[1.0], [2.0]])])
    text = build_report(trace, tmp_path, meta={"model": "m"}).read_text(encoding="utf-8")
    report = parse_report(text)
    assert "fig-transitions" in report.figures and "fig-loss-shapes" in report.figures
    assert report.tables["table-transitions"].rows == [] and report.tables["table-accuracy"].rows == [
        ["0", "ckpt/step-0", "1.0000"]]
    assert "one checkpoint" in text


def test_window_steps_are_passed_on(tmp_path):
    trace = run_trace()
    record = json.loads((build_report(trace, tmp_path, first_step=100, last_step=300).parent / DYNAMICS_FILE)
                        .read_text(encoding="utf-8"))
    assert (record["first_step"], record["last_step"]) == (100, 300)
    expected = transition_counts(trace, 100, 300).set_index("condition")["acquired"].to_dict()
    assert {t["condition"]: t["acquired"] for t in record["transitions"]} == expected
