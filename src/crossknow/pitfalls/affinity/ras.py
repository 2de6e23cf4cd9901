"""The Relative Affinity Score (section 3.3 and Appendix B of the paper):

    D_{x,y} = ((A_{x,y} - Ā_x) / Ā_x) · exp(c · |Ā_y - Ā_x|),   c = -1 (the paper's constant),

A_{x,y} the accuracy in language x on the pairs expanded from seed language y and Ā_x the mean of row x (diagonal
included), so the matrix is square over one list of languages. Lower D means a stronger affinity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from crossknow.errors import CrossknowError

RAS_CONSTANT = -1.0
"""The paper's c (Appendix B.1)."""


@dataclass(frozen=True)
class AffinityMatrix:
    """A square matrix over `languages`: rows are the evaluated language x, columns the seed language y."""

    languages: tuple[str, ...]
    values: np.ndarray
    """values[i, j] belongs to (languages[i], languages[j])."""


def accuracy_matrix(
    accuracy: Mapping[tuple[str, str], float], languages: Sequence[str] | None = None
) -> AffinityMatrix:
    """A_{x,y} from {(x, y): accuracy}; every (x, y) over `languages` (default: every language named, sorted)
    must be present, and each accuracy must lie in [0, 1]."""
    names = tuple(languages) if languages is not None else tuple(sorted({lang for pair in accuracy for lang in pair}))
    missing = [f"{x}/{y}" for x in names for y in names if (x, y) not in accuracy]
    if missing:
        raise CrossknowError(f"the accuracy table lacks {len(missing)} (language, seed) cells, e.g. {missing[:3]}: "
                             "RAS needs every language evaluated on every seed language's pairs")
    values = np.array([[float(accuracy[(x, y)]) for y in names] for x in names])
    if not np.all((values >= 0) & (values <= 1)):
        raise CrossknowError("accuracies must lie in [0, 1]")
    return AffinityMatrix(names, values)


def relative_affinity(accuracy: AffinityMatrix, c: float = RAS_CONSTANT) -> AffinityMatrix:
    """D_{x,y} for every cell of `accuracy` (see the module docstring); an error when some language's mean
    accuracy is 0 (D divides by it)."""
    mean = accuracy.values.mean(axis=1)  # Ā_x: language x over all seed languages
    if np.any(mean == 0):
        zero = [lang for lang, value in zip(accuracy.languages, mean, strict=True) if value == 0]
        raise CrossknowError(f"mean accuracy 0 in {', '.join(zero)}: the RAS divides by it")
    relative = (accuracy.values - mean[:, None]) / mean[:, None]
    scale = np.exp(c * np.abs(mean[None, :] - mean[:, None]))  # exp(c · |Ā_y − Ā_x|), y along columns
    return AffinityMatrix(accuracy.languages, relative * scale)
