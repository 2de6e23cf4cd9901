"""The Relative Affinity Score on a 3 x 3 accuracy matrix computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crossknow.errors import CrossknowError
from crossknow.pitfalls.affinity.ras import accuracy_matrix, relative_affinity

# A[x][y]: accuracy in language x on pairs expanded from seed language y
ACCURACY = {
    ("zh", "zh"): 0.2, ("zh", "ja"): 0.3, ("zh", "fr"): 0.7,
    ("ja", "zh"): 0.4, ("ja", "ja"): 0.2, ("ja", "fr"): 0.6,
    ("fr", "zh"): 0.8, ("fr", "ja"): 0.9, ("fr", "fr"): 0.4,
}


def test_ras_by_hand():
    ras = relative_affinity(accuracy_matrix(ACCURACY, ["zh", "ja", "fr"]))
    # row means: zh (0.2 + 0.3 + 0.7) / 3 = 0.4; ja (0.4 + 0.2 + 0.6) / 3 = 0.4; fr (0.8 + 0.9 + 0.4) / 3 = 0.7
    expected = {
        ("zh", "zh"): (0.2 - 0.4) / 0.4 * math.exp(-0.0),    # -0.5
        ("zh", "ja"): (0.3 - 0.4) / 0.4 * math.exp(-0.0),    # -0.25: ja's mean equals zh's
        ("zh", "fr"): (0.7 - 0.4) / 0.4 * math.exp(-0.3),    # 0.75 * e^-0.3
        ("ja", "zh"): (0.4 - 0.4) / 0.4,                      # 0
        ("ja", "fr"): (0.6 - 0.4) / 0.4 * math.exp(-0.3),
        ("fr", "zh"): (0.8 - 0.7) / 0.7 * math.exp(-0.3),
        ("fr", "ja"): (0.9 - 0.7) / 0.7 * math.exp(-0.3),
        ("fr", "fr"): (0.4 - 0.7) / 0.7,
    }
    index = {lang: k for k, lang in enumerate(ras.languages)}
    for (x, y), value in expected.items():
        assert ras.values[index[x], index[y]] == pytest.approx(value, abs=1e-12)
    assert ras.values[index["zh"], index["fr"]] == pytest.approx(0.5556136, abs=1e-6)
    # each row's relative part sums to 0 before scaling; the diagonal is never scaled
    assert ras.values[index["ja"], index["ja"]] == pytest.approx(-0.5)


def test_c_zero_leaves_the_relative_accuracy():
    ras = relative_affinity(accuracy_matrix(ACCURACY), c=0.0)
    assert ras.languages == ("fr", "ja", "zh")  # sorted when no order is given
    assert np.allclose(ras.values.sum(axis=1), 0.0)


def test_missing_cells_and_zero_means_are_errors():
    partial = dict(ACCURACY)
    del partial[("ja", "fr")]
    with pytest.raises(CrossknowError, match="lacks 1"):
        accuracy_matrix(partial)
    zeros = {key: (0.0 if key[0] == "ja" else value) for key, value in ACCURACY.items()}
    with pytest.raises(CrossknowError, match="mean accuracy 0 in ja"):
        relative_affinity(accuracy_matrix(zeros))
    with pytest.raises(CrossknowError, match=r"\[0, 1\]"):
        accuracy_matrix({**ACCURACY, ("zh", "zh"): 1.5})


def test_heatmap_shows_every_value():
    from crossknow.report.figures import png_bytes
    from crossknow.report.pitfalls_figures import affinity_heatmap

    ras = relative_affinity(accuracy_matrix(ACCURACY, ["zh", "ja", "fr"]))
    figure = affinity_heatmap(ras)
    texts = [text.get_text() for text in figure.axes[0].texts]
    assert texts[0] == "-0.50" and texts[2] == f"{0.75 * math.exp(-0.3):.2f}" and len(texts) == 9
    assert png_bytes(figure).startswith(b"\x89PNG")
