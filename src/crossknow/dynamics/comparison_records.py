"""comparison.json: every number of a recipe comparison (`crossknow compare`), as one versioned record."""

from __future__ import annotations

from pydantic import Field

from crossknow.data.schemas import Record


class ComparedRunInfo(Record):
    """One trace run of the comparison."""

    label: str = Field(description="How tables and figures name the run (its recipe, unless --label says otherwise).")
    source: str | None = Field(description="Where the run's trace came from (its run directory), when known.")
    trace_sha256: str | None = Field(description="SHA-256 of the trace file read, when read from a file.")
    recipe: str | None = Field(description="The recipe its training run's config records; None when unreachable.")
    n_items: int = Field(description="Items of its trace.")
    n_left_out: int = Field(description="Of those, items not in every run's trace: left out of the comparison.")
    first_step: int = Field(description="First checkpoint step compared.")
    last_step: int = Field(description="Last checkpoint step compared (its final numbers are read here).")


class RecipeConditionRow(Record):
    """The final numbers of one run in one condition (the shared items only)."""

    label: str = Field(description="The run's label.")
    condition: str = Field(description="Condition, e.g. memorisation, intralingual, interlingual.")
    n_items: int = Field(description="Shared items of the condition.")
    chance: float = Field(description="Chance accuracy: the mean over the items of 1/K.")
    first_step: int = Field(description="The run's first step compared.")
    last_step: int = Field(description="The run's last step compared.")
    accuracy_first: float = Field(description="Accuracy at first_step.")
    accuracy_last: float = Field(description="Accuracy at last_step: the final accuracy.")
    accuracy_change: float = Field(description="accuracy_last - accuracy_first.")
    vs_reference: float = Field(description="accuracy_last - the reference run's accuracy_last in this condition.")
    loss_ratio_first: float = Field(description="Loss ratio (ratio of sums) at first_step.")
    loss_ratio_last: float = Field(description="Loss ratio (ratio of sums) at last_step.")
    correct_loss_first: float = Field(description="Mean loss of the correct option at first_step.")
    correct_loss_last: float = Field(description="Mean loss of the correct option at last_step.")
    retained: int | None = Field(description="Right at first_step and last_step; None with one checkpoint.")
    acquired: int | None = Field(description="Wrong at first_step, right at last_step; None with one checkpoint.")
    forgotten: int | None = Field(description="Right at first_step, wrong at last_step; None with one checkpoint.")
    unacquired: int | None = Field(description="Wrong at first_step and last_step; None with one checkpoint.")
    onset_step: int | None = Field(
        description="Overfitting onset of the mean correct-option loss; None without a sustained rise."
    )


class BestRecipe(Record):
    """The run(s) with the highest final accuracy in one condition."""

    condition: str = Field(description="Condition.")
    labels: list[str] = Field(description="The best run's label; several when they tie exactly.")
    accuracy_last: float = Field(description="Their final accuracy.")
    vs_reference: float = Field(description="Their final accuracy minus the reference run's.")


class RecipeCurveRow(Record):
    """One point of one run's curves in one condition."""

    label: str = Field(description="The run's label.")
    condition: str = Field(description="Condition.")
    step: int = Field(description="Training step of the checkpoint.")
    progress: float = Field(description="step / the run's last step compared (1 = its last checkpoint).")
    accuracy: float = Field(description="Accuracy on the shared items.")
    mean_correct_loss: float = Field(description="Mean loss of the correct option.")
    loss_ratio: float = Field(description="Loss ratio (ratio of sums); chance is in RecipeConditionRow.chance.")


class RecipeComparisonSummary(Record):
    """comparison.json: the numbers behind every table and figure of the comparison report."""

    schema_version: int = Field(default=1, description="Version of this record's layout.")
    reference: str = Field(description="Label of the reference run (the first given), which vs_reference subtracts.")
    conditions: list[str] = Field(description="Conditions present, in display order.")
    runs: list[ComparedRunInfo] = Field(description="The runs compared, in the order given.")
    final: list[RecipeConditionRow] = Field(description="Final numbers per condition and run.")
    best: list[BestRecipe] = Field(description="The best run per condition by final accuracy.")
    curves: list[RecipeCurveRow] = Field(description="Accuracy and losses per run, condition and step.")
    onset_params: dict[str, float | int] = Field(description="Tolerances of the onset (tol, patience).")
    notes: list[str] = Field(description="What the comparison left out, and why (items not in every run).")
