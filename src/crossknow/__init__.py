"""crossknow: measure how language models acquire knowledge in one language and carry it to others.

From Python: `crossknow.evaluate(model, items)` scores multiple-choice items (`crossknow.evaluation.api`),
`crossknow.trace(checkpoints, items)` every checkpoint of a training run (`crossknow.dynamics.api`); each is
imported on first use, so that `import crossknow` stays light.
"""

from typing import Any

from crossknow.version import VERSION as __version__

__all__ = ["__version__", "evaluate", "trace"]


def __getattr__(name: str) -> Any:
    if name == "evaluate":
        from crossknow.evaluation.api import evaluate

        return evaluate
    if name == "trace":
        from crossknow.dynamics.api import trace

        return trace
    raise AttributeError(f"module 'crossknow' has no attribute {name!r}")
