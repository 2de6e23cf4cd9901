"""compare_recipes on three constructed traces whose final numbers, best recipe, transitions and onsets are
worked out by hand below; shared-item handling and refusals; recipe_name on training configs."""

from __future__ import annotations

import pandas as pd
import pytest

from crossknow.dynamics.comparison_records import RecipeComparisonSummary
from crossknow.dynamics.recipe_comparison import ComparedRun, compare_recipes, recipe_name
from crossknow.errors import CrossknowError
from tests.dynamics.traces import Item, build_trace

SHORT, LONG = [0, 10, 20], [0, 20, 40]


def recipe_traces() -> dict[str, pd.DataFrame]:
    """Three runs on four items (m1, m2 memorisation; i1, i2 interlingual; answer = option 0, two options).

    Right (option 0 has the lower loss) at each step:
    mono  (0, 10, 20): m1 F T T, m2 F F T, i1 F F F, i2 T T T
    trans (0, 10, 20): m1 F T T, m2 F F F, i1 F T T, i2 T T T
    roman (0, 20, 40): m1 F T T, m2 F T T, i1 F F F, i2 T F F
    """
    return {
        "mono": build_trace(SHORT, [
            Item("m1", "memorisation", 0, [[2, 1, 1], [1, 2, 2]]),
            Item("m2", "memorisation", 0, [[2, 2, 1], [1, 1, 2]]),
            Item("i1", "interlingual", 0, [[2, 2, 2], [1, 1, 1]]),
            Item("i2", "interlingual", 0, [[1, 1, 1], [2, 2, 2]])]),
        "trans": build_trace(SHORT, [
            Item("m1", "memorisation", 0, [[2, 1, 1], [1, 2, 2]]),
            Item("m2", "memorisation", 0, [[2, 2, 2], [1, 1, 1]]),
            Item("i1", "interlingual", 0, [[2, 1, 0.5], [1, 1.5, 1.5]]),
            Item("i2", "interlingual", 0, [[1, 1, 1], [2, 2, 2]])]),
        "roman": build_trace(LONG, [
            Item("m1", "memorisation", 0, [[2, 1, 1], [1, 2, 2]]),
            Item("m2", "memorisation", 0, [[2, 1, 0.5], [1, 2, 2]]),
            Item("i1", "interlingual", 0, [[2, 2.5, 3], [1, 1, 1]]),
            Item("i2", "interlingual", 0, [[1, 2.5, 3], [2, 2, 2]])]),
    }


EXPECTED_FINAL = {
    # (condition, label): accuracy first, accuracy last, loss ratio last (sum of correct / sum of all losses),
    # retained, acquired, forgotten, unacquired, onset
    ("memorisation", "mono"): (0.0, 1.0, (1 + 1) / (3 + 3), 0, 2, 0, 0, None),
    ("memorisation", "trans"): (0.0, 0.5, (1 + 2) / (3 + 3), 0, 1, 0, 1, None),
    ("memorisation", "roman"): (0.0, 1.0, (1 + 0.5) / (3 + 2.5), 0, 2, 0, 0, None),
    ("interlingual", "mono"): (0.5, 0.5, (2 + 1) / (3 + 3), 1, 0, 0, 1, None),
    ("interlingual", "trans"): (0.5, 1.0, (0.5 + 1) / (2 + 3), 1, 1, 0, 0, None),
    # roman's interlingual mean correct loss is 1.5, 2.5, 3.0: lowest at step 0, then two risen points.
    ("interlingual", "roman"): (0.5, 0.0, (3 + 3) / (4 + 5), 0, 0, 1, 1, 0),
}


def compared(traces: dict[str, pd.DataFrame] | None = None):
    return compare_recipes([ComparedRun(label, trace) for label, trace in (traces or recipe_traces()).items()])


def test_final_numbers_equal_the_hand_computation():
    comparison = compared()
    assert comparison.conditions == ["memorisation", "interlingual"]
    rows = {(row.condition, row.label): row for row in comparison.final.itertuples()}
    assert set(rows) == set(EXPECTED_FINAL)
    for key, (first, last, ratio, retained, acquired, forgotten, unacquired, onset) in EXPECTED_FINAL.items():
        row = rows[key]
        assert (row.accuracy_first, row.accuracy_last) == pytest.approx((first, last)), key
        assert row.accuracy_change == pytest.approx(last - first)
        assert row.loss_ratio_last == pytest.approx(ratio), key
        assert (row.retained, row.acquired, row.forgotten, row.unacquired) == (retained, acquired, forgotten,
                                                                               unacquired), key
        assert (None if pd.isna(row.onset_step) else row.onset_step) == onset, key
        assert row.n_items == 2 and row.chance == pytest.approx(0.5)
        reference = EXPECTED_FINAL[(key[0], "mono")][1]
        assert row.vs_reference == pytest.approx(last - reference)
    assert (rows[("interlingual", "roman")].first_step, rows[("interlingual", "roman")].last_step) == (0, 40)


def test_best_recipe_per_condition_names_ties():
    best = compared().best.set_index("condition")
    assert best.loc["memorisation", "labels"] == ["mono", "roman"]
    assert best.loc["memorisation", "accuracy_last"] == 1.0 and best.loc["memorisation", "vs_reference"] == 0.0
    assert best.loc["interlingual", "labels"] == ["trans"]
    assert best.loc["interlingual", "vs_reference"] == pytest.approx(0.5)


def test_curves_carry_each_runs_progress():
    curves = compared().curves
    roman = curves[(curves["label"] == "roman") & (curves["condition"] == "interlingual")].sort_values("step")
    assert roman["progress"].tolist() == [0.0, 0.5, 1.0]
    assert roman["mean_correct_loss"].tolist() == pytest.approx([1.5, 2.5, 3.0])
    assert roman["accuracy"].tolist() == [0.5, 0.0, 0.0]
    assert curves[curves["label"] == "mono"]["condition"].tolist() == ["memorisation"] * 3 + ["interlingual"] * 3


def test_the_record_holds_the_same_numbers():
    comparison = compared()
    record = RecipeComparisonSummary.model_validate(comparison.to_record().model_dump(mode="json"))
    assert record.reference == "mono"
    assert [(run.label, run.n_items, run.n_left_out, run.last_step) for run in record.runs] == [
        ("mono", 4, 0, 20), ("trans", 4, 0, 20), ("roman", 4, 0, 40)]
    onsets = {(row.condition, row.label): row.onset_step for row in record.final}
    assert onsets[("interlingual", "roman")] == 0 and onsets[("memorisation", "mono")] is None
    assert [(b.condition, b.labels) for b in record.best] == [("memorisation", ["mono", "roman"]),
                                                              ("interlingual", ["trans"])]
    assert len(record.curves) == 3 * 2 * 3


def test_items_not_in_every_run_are_left_out_with_a_note():
    traces = recipe_traces()
    trans = traces["trans"]
    extra = build_trace(SHORT, [Item("x1", "memorisation", 0, [[1, 1, 1], [2, 2, 2]])])
    traces["trans"] = pd.concat([trans[trans["item_id"] != "i2"], extra], ignore_index=True)
    comparison = compared(traces)
    assert comparison.left_out == [1, 1, 1]  # mono and roman lose i2, trans loses x1
    assert len(comparison.notes) == 3 and "trans: 1 of its 4 items" in comparison.notes[1]
    rows = {(row.condition, row.label): row for row in comparison.final.itertuples()}
    # interlingual is i1 alone now: mono wrong at the end, trans right, roman wrong.
    assert [rows[("interlingual", label)].accuracy_last for label in ("mono", "trans", "roman")] == [0.0, 1.0, 0.0]
    assert rows[("memorisation", "trans")].n_items == 2


@pytest.mark.parametrize("change, words", [
    ({"answer": 1}, "differ in answer"),
    ({"condition": "intralingual"}, "differ in condition"),
])
def test_a_shared_item_that_differs_is_refused(change, words):
    traces = recipe_traces()
    item = Item("i1", change.get("condition", "interlingual"), change.get("answer", 0), [[2, 2, 2], [1, 1, 1]])
    roman = traces["roman"]
    traces["roman"] = pd.concat([roman[roman["item_id"] != "i1"], build_trace(LONG, [item])], ignore_index=True)
    with pytest.raises(CrossknowError, match=words) as error:
        compared(traces)
    assert "'i1'" in str(error.value) and "mono and roman" in str(error.value)


def test_refusals():
    traces = recipe_traces()
    with pytest.raises(CrossknowError, match="at least two"):
        compare_recipes([ComparedRun("mono", traces["mono"])])
    with pytest.raises(CrossknowError, match="share the label"):
        compare_recipes([ComparedRun("a", traces["mono"]), ComparedRun("a", traces["trans"])])
    other = build_trace(SHORT, [Item("z", "memorisation", 0, [[1, 1, 1], [2, 2, 2]], set="set-b")])
    with pytest.raises(CrossknowError, match="share no item"):
        compare_recipes([ComparedRun("a", traces["mono"]), ComparedRun("b", other)])
    broken = traces["trans"].drop(columns=["loss"])
    with pytest.raises(CrossknowError, match="dir/trans.*lacks column"):
        compare_recipes([ComparedRun("a", traces["mono"]), ComparedRun("b", broken, source="dir/trans")])


@pytest.mark.parametrize("config, name", [
    ({"recipe": "documents", "transfer_recipe": "none", "langs": ["en"]}, "monolingual"),
    ({"recipe": "documents", "transfer_recipe": "none", "langs": ["ja", "en"]}, "multilingual"),
    ({"recipe": "documents", "transfer_recipe": "documents", "langs": ["en"]}, "documents"),
    ({"recipe": "documents", "transfer_recipe": "translation", "langs": ["en"]}, "translation"),
    ({"recipe": "documents", "transfer_recipe": "romanisation", "langs": ["en"]}, "romanisation"),
    ({"recipe": "documents", "transfer_recipe": "roman2en", "langs": ["en"]}, "roman2en"),
    ({"recipe": "instruction", "transfer_recipe": "none", "langs": ["en"]}, "instruction"),
    ({"recipe": "instruction", "transfer_recipe": "translation", "langs": ["en"]}, "instruction+translation"),
])
def test_recipe_names(config, name):
    assert recipe_name(config) == name
