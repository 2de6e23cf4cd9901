"""Knowledge-acquisition dynamics over training checkpoints (AdaXEval tracing, full paper Sec. 4,
short paper Secs. 3-4): pure functions on the trace table, one row per checkpoint x item x option.

- accuracy per condition and step (`accuracy_by_condition`), with its chance level;
- mean loss of the correct option (`correct_loss_by_condition`) and the loss ratio (`loss_ratio_by_condition`);
- instance transitions between two checkpoints (`item_transitions`, `transition_counts`);
- loss-shape classes of acquired items (`classify_loss_shapes`, definitions in `SHAPE_DEFINITIONS`);
- overfitting onset of any curve (`overfitting_onset`, definition in `ONSET_DEFINITION`);
- all of them at once (`analyse_dynamics`), saved as dynamics.json (`DynamicsSummary`).
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
