"""Cross-Lingual Pitfalls: probing for questions that models answer in English but not in a target language,
in TextAttack's shape (an objective, a transformation, constraints and a search, and named recipes), and the
evaluation of models on the pairs found.

One folder per command (probe/, affinity/, finetune/, categorize/); the modules at this level are those several
commands share, and no command folder imports another (the `pitfalls-commands` contract; docs/architecture.md).
From Python, `crossknow.pitfalls.evaluate(models, pairs)` is `crossknow pitfalls eval` (`api`, imported on first use).
"""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "evaluate":
        from crossknow.pitfalls.api import evaluate

        return evaluate
    raise AttributeError(f"module 'crossknow.pitfalls' has no attribute {name!r}")
