"""Knowledge-acquisition dynamics over training checkpoints (AdaXEval tracing, full paper Sec. 4, short paper
Secs. 3-4): pure functions on the trace table, one row per checkpoint x item x option.

Accuracy, the correct option's loss and the loss ratio per condition and step, instance transitions, loss-shape
classes of acquired items, the overfitting onset of any curve, and all of them at once (`analyse_dynamics`,
saved as dynamics.json).
"""

import importlib
from typing import Any

_HOMES = {
    "DynamicsResult": "analysis",
    "DynamicsSummary": "records",
    "ONSET_DEFINITION": "onset",
    "OnsetParams": "onset",
    "SHAPES": "shapes",
    "SHAPE_DEFINITIONS": "shapes",
    "ShapeParams": "shapes",
    "TRANSITIONS": "transitions",
    "TraceTableError": "table",
    "accuracy_by_condition": "accuracy",
    "analyse_dynamics": "analysis",
    "chance_by_condition": "accuracy",
    "classify_loss_shapes": "shapes",
    "correct_loss_by_condition": "losses",
    "count_shapes": "shapes",
    "item_loss_ratios": "losses",
    "item_states": "table",
    "item_transitions": "transitions",
    "loss_ratio_by_condition": "losses",
    "onsets_by_condition": "onset",
    "overfitting_onset": "onset",
    "transition_counts": "transitions",
    "validate_trace": "table",
}
"""Where each public name lives; imported on first use, so that importing a submodule (the CLI reads
`trace_config` at start-up) does not load pandas and every analysis."""

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'crossknow.dynamics' has no attribute {name!r}")
    return getattr(importlib.import_module(f"crossknow.dynamics.{_HOMES[name]}"), name)
