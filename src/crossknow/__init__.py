"""crossknow: measure how language models acquire knowledge in one language and carry it to others.

`crossknow.evaluate(model, items)` scores multiple-choice items from Python (`crossknow.evaluation.api`); it is
imported on first use, so that `import crossknow` stays light.
"""

from typing import Any

from crossknow.version import VERSION as __version__

__all__ = ["__version__", "evaluate"]


def __getattr__(name: str) -> Any:
    if name == "evaluate":
        from crossknow.evaluation.api import evaluate

        return evaluate
    raise AttributeError(f"module 'crossknow' has no attribute {name!r}")
