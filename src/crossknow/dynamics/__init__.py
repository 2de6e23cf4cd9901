"""Knowledge-acquisition dynamics over training checkpoints (AdaXEval tracing, full paper Secs. 4-5,
short paper Secs. 3-4): pure functions on the trace table, one row per checkpoint x item x option.

- accuracy per condition and step (`accuracy_by_condition`), with its chance level;
- mean loss of the correct option (`correct_loss_by_condition`) and the loss ratio (`loss_ratio_by_condition`);
- instance transitions between two checkpoints (`item_transitions`, `transition_counts`);
- loss-shape classes of acquired items (`classify_loss_shapes`, definitions in `SHAPE_DEFINITIONS`);
- overfitting onset of any curve (`overfitting_onset`, definition in `ONSET_DEFINITION`);
- all of them at once (`analyse_dynamics`), saved as dynamics.json (`DynamicsSummary`).
"""

from crossknow.dynamics.accuracy import accuracy_by_condition, chance_by_condition
from crossknow.dynamics.analysis import DynamicsResult, analyse_dynamics
from crossknow.dynamics.losses import correct_loss_by_condition, item_loss_ratios, loss_ratio_by_condition
from crossknow.dynamics.onset import ONSET_DEFINITION, OnsetParams, onsets_by_condition, overfitting_onset
from crossknow.dynamics.records import DynamicsSummary
from crossknow.dynamics.shapes import SHAPE_DEFINITIONS, SHAPES, ShapeParams, classify_loss_shapes, count_shapes
from crossknow.dynamics.table import TraceTableError, item_states, validate_trace
from crossknow.dynamics.transitions import TRANSITIONS, item_transitions, transition_counts

__all__ = [
    "ONSET_DEFINITION",
    "SHAPES",
    "SHAPE_DEFINITIONS",
    "TRANSITIONS",
    "DynamicsResult",
    "DynamicsSummary",
    "OnsetParams",
    "ShapeParams",
    "TraceTableError",
    "accuracy_by_condition",
    "analyse_dynamics",
    "chance_by_condition",
    "classify_loss_shapes",
    "correct_loss_by_condition",
    "count_shapes",
    "item_loss_ratios",
    "item_states",
    "item_transitions",
    "loss_ratio_by_condition",
    "onsets_by_condition",
    "overfitting_onset",
    "transition_counts",
    "validate_trace",
]
