"""ECLEKTIC: closed-book cross-lingual knowledge transfer (Goldman et al., 2025).

Questions about facts that live in one language's Wikipedia, asked in every language; a model's
answers are judged, then scored as overall success and transfer score (section 3.2), per source x
target language. Modules: `examples` (the sets), `metrics` (the scores), `agreement` (judges'
kappa), `prompts`, `answer`, `judge`, `judge_free`, `build`, `run`. From Python, `crossknow.eclektic.score(judgements)`
scores judgements made elsewhere (`api`, imported on first use).
"""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "score":
        from crossknow.eclektic.api import score

        return score
    raise AttributeError(f"module 'crossknow.eclektic' has no attribute {name!r}")
