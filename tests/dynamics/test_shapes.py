"""Loss-shape classes of acquired items, on curves whose class is known by construction."""

from __future__ import annotations

import pytest

from crossknow.dynamics import SHAPE_DEFINITIONS, SHAPES, ShapeParams, classify_loss_shapes, count_shapes
from crossknow.dynamics.shapes import shape_examples
from tests.dynamics.traces import Item, build_trace, flat

STEPS = [0, 100, 200, 300, 400]
FLAT_DISTRACTORS = [flat(2.0, 5), flat(2.5, 5), flat(3.0, 5)]


def stable_gain(item_id: str = "sg", correct: list[float] | None = None) -> Item:
    """Correct loss falls monotonically from 3.0 to 1.4 below flat distractors (2.0 is lowest at the start)."""
    return Item(item_id, "memorisation", 0, [correct or [3.0, 2.6, 2.2, 1.8, 1.4], *FLAT_DISTRACTORS])


def loss_shielding(item_id: str = "ls") -> Item:
    """Correct loss rises 2.0 -> 2.8, the distractors rise faster and pass it."""
    return Item(item_id, "memorisation", 0, [
        [2.0, 2.2, 2.4, 2.6, 2.8], [1.5, 2.0, 2.6, 3.2, 3.8], [1.8, 2.5, 3.0, 3.5, 4.0], [2.5, 3.0, 3.5, 4.0, 4.5],
    ])


def zig_zag(item_id: str = "zz") -> Item:
    """Correct loss jumps down and up, ending below the flat distractors."""
    return Item(item_id, "intralingual", 0, [[3.0, 1.5, 3.2, 1.6, 1.4], *FLAT_DISTRACTORS])


def shapes_of(*items: Item, **kwargs) -> dict[str, str]:
    table = classify_loss_shapes(build_trace(STEPS, list(items)), **kwargs)
    return dict(zip(table["item_id"], table["shape"], strict=True))


def test_the_three_classes():
    assert shapes_of(stable_gain(), loss_shielding(), zig_zag()) == {
        "sg": "Stable-Gain", "ls": "Loss-Shielding", "zz": "Unstable"}


def test_measures_of_an_item():
    row = classify_loss_shapes(build_trace(STEPS, [loss_shielding()])).iloc[0]
    assert row["correct_first"] == 2.0 and row["correct_last"] == 2.8
    assert row["correct_change"] == pytest.approx(0.8)
    assert row["distractor_mean_change"] == pytest.approx((2.3 + 2.2 + 2.0) / 3)
    assert row["max_step_rise"] == pytest.approx(0.2) and row["max_step_fall"] == 0.0
    assert row["condition"] == "memorisation" and row["n_steps"] == 5


def test_a_flat_correct_loss_is_not_shielding_even_when_the_distractors_rise():
    """The short paper's Loss-Shielding is a correct loss that "increase[s] while remaining lower than incorrect
    options": a flat one does not increase, however fast the distractors rise (the old rule, c_n - c_0 > -m,
    called this item Loss-Shielding)."""
    item = Item("flat", "memorisation", 0, [flat(2.0, 5), [1.9, 2.3, 2.6, 2.8, 3.0], flat(3.0, 5), flat(3.5, 5)])
    assert shapes_of(item) == {"flat": "Unstable"}
    assert shapes_of(item, params=ShapeParams(rise=0.0)) == {"flat": "Loss-Shielding"}  # rise 0: flat counts


def test_rise_is_the_least_net_rise_that_counts():
    # correct 2.0 -> 2.06: a rise of 3% of c_0, steady; the distractors rise by far more and pass it
    item = Item("slow", "memorisation", 0, [[2.0, 2.015, 2.03, 2.045, 2.06], [1.9, 2.3, 2.6, 2.8, 3.0],
                                            [1.95, 2.4, 2.8, 3.2, 3.5], flat(3.5, 5)])
    assert shapes_of(item) == {"slow": "Unstable"}  # 0.06 < r = 0.05 * 2.0 = 0.10
    assert shapes_of(item, params=ShapeParams(rise=0.02)) == {"slow": "Loss-Shielding"}  # 0.06 >= 0.04
    # a slight net fall never counts as a rise, whatever the tolerance
    falling = Item("fall", "memorisation", 0, [[2.0, 1.99, 1.98, 1.97, 1.96], *item.curves[1:]])
    assert shapes_of(falling, params=ShapeParams(rise=0.0)) == {"fall": "Unstable"}


def test_fall_then_rise_is_unstable():
    item = Item("u", "memorisation", 0, [[2.0, 1.0, 1.5, 2.2, 2.5], [1.5, 2.0, 2.5, 3.0, 3.5],
                                         [2.5, 3.0, 3.5, 4.0, 4.5], [2.5, 3.0, 3.5, 4.0, 4.5]])
    assert shapes_of(item) == {"u": "Unstable"}


def test_rise_without_distractors_outpacing_is_unstable():
    item = Item("r", "memorisation", 0, [[2.0, 2.25, 2.5, 2.75, 3.0], [1.0, 1.6, 2.3, 2.9, 3.5],
                                         [4.0, 3.8, 3.6, 3.4, 3.2], [4.0, 3.8, 3.6, 3.4, 3.2]])
    table = classify_loss_shapes(build_trace(STEPS, [item]))
    assert table["shape"].tolist() == ["Unstable"]
    assert table["distractor_mean_change"].iloc[0] < table["correct_change"].iloc[0]


def test_tol_decides_whether_a_small_rise_is_steady():
    noisy = stable_gain("n", [3.0, 2.6, 2.65, 2.0, 1.4])  # one rise of 0.05 = 1.7% of the first loss
    assert shapes_of(noisy) == {"n": "Stable-Gain"}
    assert shapes_of(noisy, params=ShapeParams(tol=0.01)) == {"n": "Unstable"}


def test_margin_decides_whether_a_fall_is_a_gain():
    # falls 3.0 -> 2.9 (3.3%), distractors flat: below the default 5% margin, neither gain nor shielding
    item = Item("s", "memorisation", 0, [[3.0, 2.975, 2.95, 2.925, 2.9], [2.95, 2.95, 2.95, 2.95, 2.95],
                                         flat(4.0, 5), flat(4.0, 5)])
    assert shapes_of(item) == {"s": "Unstable"}
    assert shapes_of(item, params=ShapeParams(margin=0.02)) == {"s": "Stable-Gain"}


def test_only_acquired_items_are_classified():
    retained = Item("kept", "memorisation", 0, [flat(1.0, 5), flat(2.0, 5)])
    never = Item("never", "memorisation", 0, [flat(3.0, 5), flat(2.0, 5)])
    forgotten = Item("lost", "memorisation", 0, [[1.0, 1.5, 2.0, 2.5, 3.0], flat(2.0, 5)])
    assert shapes_of(retained, never, forgotten, stable_gain()) == {"sg": "Stable-Gain"}


def test_no_acquired_item_gives_an_empty_table():
    table = classify_loss_shapes(build_trace(STEPS, [Item("kept", "memorisation", 0, [flat(1.0, 5), flat(2.0, 5)])]))
    assert table.empty and "shape" in table.columns
    counts = count_shapes(table, ["memorisation"])
    assert counts.to_dict("records") == [{"condition": "memorisation", "n_acquired": 0, "Stable-Gain": 0,
                                          "Loss-Shielding": 0, "Unstable": 0}]
    assert shape_examples(table) == {shape: None for shape in SHAPES}


def test_items_with_different_option_counts():
    three = Item("three", "memorisation", 0, [[3.0, 2.5, 2.0, 1.5, 1.0], flat(2.0, 5), flat(2.5, 5)])
    assert shapes_of(three, loss_shielding(), zig_zag()) == {"three": "Stable-Gain", "ls": "Loss-Shielding",
                                                            "zz": "Unstable"}


def test_the_window_is_first_step_to_last_step():
    # zig-zag over all steps, but a steady fall from step 200 on: acquired between 200 and 400
    item = Item("w", "memorisation", 0, [[1.0, 3.0, 2.6, 2.3, 1.5], *FLAT_DISTRACTORS])
    assert shapes_of(item) == {}  # right at step 0 and at step 400: retained, not acquired
    assert shapes_of(item, first_step=200) == {"w": "Stable-Gain"}
    assert classify_loss_shapes(build_trace(STEPS, [item]), 200, 400)["n_steps"].tolist() == [3]


def test_counts_and_examples():
    items = [stable_gain("sg1", [3.0, 2.8, 2.6, 2.4, 1.9]), stable_gain("sg2"), loss_shielding(), zig_zag()]
    table = classify_loss_shapes(build_trace(STEPS, items))
    counts = count_shapes(table, ["memorisation", "intralingual", "interlingual"]).set_index("condition")
    assert counts.loc["memorisation"].to_dict() == {"n_acquired": 3, "Stable-Gain": 2, "Loss-Shielding": 1,
                                                    "Unstable": 0}
    assert counts.loc["intralingual", "Unstable"] == 1
    assert counts.loc["interlingual"].sum() == 0
    assert list(counts.index) == ["memorisation", "intralingual", "interlingual"]
    examples = shape_examples(table)
    assert examples == {"Stable-Gain": ("set-a", "sg2"), "Loss-Shielding": ("set-a", "ls"), "Unstable": ("set-a", "zz")}


def test_definitions_state_the_defaults():
    for name in SHAPES:
        assert name in SHAPE_DEFINITIONS
    for name in ("margin", "rise", "tol"):
        assert f"{name} = {getattr(ShapeParams(), name)}" in SHAPE_DEFINITIONS
