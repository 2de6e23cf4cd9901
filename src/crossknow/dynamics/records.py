"""dynamics.json: every number of the dynamics analyses, as one versioned record."""

from __future__ import annotations

from pydantic import Field

from crossknow.data.schemas import Record


class StepInfo(Record):
    """One checkpoint of the trace."""

    step: int = Field(description="Training step of the checkpoint (0 = the model before training).")
    checkpoint: str | None = Field(
        description="The checkpoint's path or revision; None when the trace has no such column."
    )


class AccuracyRow(Record):
    """Accuracy of one condition at one checkpoint."""

    step: int = Field(description="Training step.")
    condition: str = Field(description="Condition, e.g. memorisation, intralingual, interlingual.")
    n_items: int = Field(description="Items of the condition.")
    n_correct: int = Field(description="Items whose lowest-loss option (ties to the lower index) is the answer.")
    accuracy: float = Field(description="n_correct / n_items.")


class CorrectLossRow(Record):
    """Mean loss of the correct option of one condition at one checkpoint."""

    step: int = Field(description="Training step.")
    condition: str = Field(description="Condition.")
    n_items: int = Field(description="Items of the condition.")
    mean_correct_loss: float = Field(description="Mean over the items of the correct option's loss (mean token CE).")


class LossRatioRow(Record):
    """Loss ratio of one condition at one checkpoint."""

    step: int = Field(description="Training step.")
    condition: str = Field(description="Condition.")
    n_items: int = Field(description="Items of the condition.")
    loss_ratio: float = Field(description="Sum of correct-option losses / sum of all options' losses (ratio of sums).")
    mean_item_ratio: float = Field(description="Mean of the per-item ratios (correct loss / sum of the item's losses).")
    chance: float = Field(description="n_items / sum of the items' option counts; 1/K with K options each.")


class TransitionRow(Record):
    """Instance transitions of one condition between first_step and last_step."""

    condition: str = Field(description="Condition.")
    n_items: int = Field(description="Items of the condition; the four counts sum to it.")
    retained: int = Field(description="Right at first_step and at last_step.")
    acquired: int = Field(description="Wrong at first_step, right at last_step.")
    forgotten: int = Field(description="Right at first_step, wrong at last_step.")
    unacquired: int = Field(description="Wrong at first_step and at last_step.")


class ShapeCountRow(Record):
    """Loss-shape class counts of one condition's acquired items."""

    condition: str = Field(description="Condition.")
    n_acquired: int = Field(description="Items acquired between first_step and last_step.")
    stable_gain: int = Field(description="Acquired items of class Stable-Gain.")
    loss_shielding: int = Field(description="Acquired items of class Loss-Shielding.")
    unstable: int = Field(description="Acquired items of class Unstable.")


class ShapeRow(Record):
    """The loss shape of one acquired item and the measures that decided it."""

    set: str = Field(description="Evaluation set name.")
    item_id: str = Field(description="Item id, unique within the set.")
    condition: str = Field(description="Condition.")
    shape: str = Field(description="Stable-Gain, Loss-Shielding or Unstable (see shape_definitions).")
    correct_first: float = Field(description="Correct option's loss at first_step.")
    correct_last: float = Field(description="Correct option's loss at last_step.")
    correct_change: float = Field(description="correct_last - correct_first.")
    distractor_mean_change: float = Field(
        description="Mean over the distractors of (loss at last_step - loss at first_step)."
    )
    max_step_rise: float = Field(description="Largest step-to-step rise of the correct loss in the window (>= 0).")
    max_step_fall: float = Field(description="Largest step-to-step fall of the correct loss in the window (>= 0).")


class ItemRef(Record):
    """An item, by its key."""

    set: str = Field(description="Evaluation set name.")
    item_id: str = Field(description="Item id, unique within the set.")


class OnsetRow(Record):
    """Overfitting onset of one curve."""

    curve: str = Field(description="'correct-loss' (a condition's mean correct-option loss) or 'train-loss'.")
    condition: str | None = Field(description="The condition of a correct-loss curve; None for the training loss.")
    onset_step: int | None = Field(description="Step of the minimum before a sustained rise; None without such a rise.")
    min_step: int = Field(description="Step of the curve's minimum (the first, on ties).")
    min_value: float = Field(description="The curve's minimum.")


class DynamicsSummary(Record):
    """dynamics.json: the numbers behind every figure and table of the dynamics report."""

    schema_version: int = Field(default=1, description="Version of this record's layout.")
    steps: list[StepInfo] = Field(description="The trace's checkpoints, by step.")
    first_step: int | None = Field(
        description="First step compared by transitions and shapes; None with one checkpoint."
    )
    last_step: int | None = Field(description="Last step compared by transitions and shapes; None with one checkpoint.")
    conditions: list[str] = Field(description="Conditions present, in display order.")
    n_items: dict[str, int] = Field(description="Items per condition (the same at every step).")
    chance_accuracy: dict[str, float] = Field(description="Per condition, mean over items of 1/K.")
    accuracy: list[AccuracyRow] = Field(description="Accuracy per step and condition.")
    correct_loss: list[CorrectLossRow] = Field(description="Mean correct-option loss per step and condition.")
    loss_ratio: list[LossRatioRow] = Field(description="Loss ratio per step and condition.")
    transitions: list[TransitionRow] = Field(description="Transition counts per condition; empty with one checkpoint.")
    shape_counts: list[ShapeCountRow] = Field(description="Loss-shape counts per condition; empty with one checkpoint.")
    shapes: list[ShapeRow] = Field(description="Loss shape of every acquired item.")
    shape_examples: dict[str, ItemRef | None] = Field(description="Example item per shape class (None: no item).")
    onsets: list[OnsetRow] = Field(description="Overfitting onsets of the correct-loss curves and the training loss.")
    shape_params: dict[str, float] = Field(description="Tolerances of the shape classes (margin, rise, tol).")
    onset_params: dict[str, float | int] = Field(description="Tolerances of the onset (tol, patience).")
    shape_definitions: str = Field(description="The shape-class definitions, in words.")
    onset_definition: str = Field(description="The onset definition, in words.")
    notes: list[str] = Field(description="What could not be computed, and why (e.g. one checkpoint: no transitions).")
