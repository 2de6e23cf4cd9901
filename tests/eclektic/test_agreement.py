import pytest
from sklearn.metrics import cohen_kappa_score

from crossknow.eclektic.agreement import cohen_kappa, fleiss_kappa, judge_agreement

Y, N = True, False


def test_cohen_kappa_by_hand_and_against_sklearn():
    a = [Y, Y, Y, Y, Y, Y, N, N, N, N]
    b = [Y, Y, Y, Y, N, N, N, N, N, Y]
    # p_o = 7/10 (items 1-4 and 7-9 agree); marginals a: 6 Y 4 N, b: 5 Y 5 N;
    # p_e = 0.6 x 0.5 + 0.4 x 0.5 = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4.
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))


def test_cohen_kappa_leaves_out_unrated_items():
    a = [Y, Y, None, N, N, Y]
    b = [Y, N, Y, N, None, Y]
    # Items 1, 2, 4, 6 remain: a = Y Y N Y, b = Y N N Y; p_o = 3/4;
    # p_e = (3/4)(2/4) + (1/4)(2/4) = 1/2; kappa = (3/4 - 1/2) / (1/2) = 0.5.
    assert cohen_kappa(a, b) == pytest.approx(0.5)
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score([Y, Y, N, Y], [Y, N, N, Y]))
    assert cohen_kappa([Y, Y], [Y, Y]) is None  # one category only: p_e = 1
    assert cohen_kappa([None], [Y]) is None
    with pytest.raises(ValueError, match="2 and 1"):
        cohen_kappa([Y, N], [Y])


def test_fleiss_kappa_by_hand():
    items = [[Y, Y, Y], [Y, Y, N], [N, N, N], [Y, N, N]]
    # P_i = 1, 1/3, 1, 1/3 -> P = 2/3; 6 Y and 6 N of 12 ratings -> P_e = 1/2; kappa = (2/3 - 1/2) / (1/2) = 1/3.
    assert fleiss_kappa(items) == pytest.approx(1 / 3)


def test_fleiss_kappa_on_fleiss_1971_style_table():
    """Ten subjects, 14 raters, 5 categories: the worked example reproduced in most textbooks (kappa 0.210)."""
    counts = [
        [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
    ]
    items = [[category for category, k in enumerate(row) for _ in range(k)] for row in counts]
    # By hand: P = 3.780/10 = 0.378; category shares 0.143, 0.200, 0.279, 0.150, 0.229 -> P_e = 0.213.
    assert fleiss_kappa(items) == pytest.approx((0.378 - 0.2128) / (1 - 0.2128), abs=0.001)
    assert fleiss_kappa(items) == pytest.approx(0.210, abs=0.001)


def test_fleiss_kappa_with_missing_ratings_and_two_raters():
    items = [[Y, Y, None], [Y, N, None], [N, N, N], [Y, None, None]]
    # Item 4 has one rating: left out. P_i = 1 (2 of 2 agree), 0, 1 -> P = 2/3;
    # ratings: Y = 2 + 1 = 3, N = 1 + 3 = 4 of 7 -> P_e = 9/49 + 16/49 = 25/49;
    # kappa = (2/3 - 25/49) / (24/49) = (98/147 - 75/147) / (72/147) = 23/72.
    assert fleiss_kappa(items) == pytest.approx(23 / 72)
    # Two raters: Fleiss' kappa is Scott's pi. a = Y Y N N, b = Y N N N: p_o = 3/4;
    # pooled shares Y 3/8, N 5/8 -> p_e = 9/64 + 25/64 = 34/64; pi = (48/64 - 34/64) / (30/64) = 14/30.
    assert fleiss_kappa([[Y, Y], [Y, N], [N, N], [N, N]]) == pytest.approx(14 / 30)
    assert fleiss_kappa([[Y, None], [None, N]]) is None


def verdicts(judge, values):
    return [{"q_id": f"q{i // 2}", "lang": ("en", "ja")[i % 2], "sample": 0, "judge": judge, "verdict": v}
            for i, v in enumerate(values)]


def test_judge_agreement_picks_cohen_or_fleiss():
    a, b, c = [Y, Y, N, N, Y, None], [Y, N, N, N, Y, Y], [Y, Y, N, Y, None, N]
    two = judge_agreement(verdicts("gpt", a) + verdicts("gemini", b))
    assert (two.method, two.n_judges, two.n_items, two.n_left_out) == ("cohen", 2, 5, 1)
    assert two.kappa == pytest.approx(cohen_kappa(b[:5], a[:5]))
    three = judge_agreement(verdicts("gpt", a) + verdicts("gemini", b) + verdicts("claude", c))
    assert (three.method, three.n_items, three.n_left_out) == ("fleiss", 6, 0)
    assert three.kappa == pytest.approx(fleiss_kappa([list(r) for r in zip(c, b, a, strict=True)]))
    with pytest.raises(ValueError, match="two judges"):
        judge_agreement(verdicts("gpt", a))
