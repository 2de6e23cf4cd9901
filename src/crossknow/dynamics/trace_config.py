"""The settings of `crossknow trace` (config.yaml of a trace run)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from crossknow.models.access import LOADING, ModelsRole, RoleConfig, RoleKeys
from crossknow.models.boundary import BOUNDARY_HELP, Boundary
from crossknow.store.config_keys import VOLATILE

CHECKPOINTS_HELP = (
    "Checkpoint sources: a train run directory, a directory of checkpoint-STEP directories, a model directory, "
    "default, hf:ID@REVISION, or hf:ID@PATTERN for every revision of the repository that matches (stage1-step*, or "
    "names and patterns separated by commas); a STEP= prefix sets the step (see crossknow.dynamics.checkpoints).")
"""The help of `checkpoints` (trace, trace-sequences)."""
PRUNE_HELP = ("Delete each Hub revision of the sweep from the Hugging Face cache once its scores are committed, all "
              "but the last (kept: the final model); the sweep then holds one revision on disk at a time.")
"""The help of `prune` (trace, trace-sequences)."""


def check_prune(prune: bool, specs: list[str]) -> None:
    """Refuse `prune` for a sweep without a Hub revision, before any file is written (local checkpoints are never
    deleted)."""
    from crossknow.models.hub_revisions import hub_revision

    if prune and not any(hub_revision(spec) for spec in specs):
        raise ValueError("--prune deletes Hub revisions (hf:ORG/NAME@REVISION) from the Hugging Face cache once they "
                         "are scored, and no checkpoint is one; local checkpoints are never deleted")


class TraceConfig(RoleConfig):
    """Everything that decides a trace's numbers (config.yaml)."""

    ROLES = (RoleKeys("checkpoints", own=("device", "dtype", *LOADING)),)

    checkpoints: ModelsRole = Field(
        description=CHECKPOINTS_HELP,
    )
    data: list[str] = Field(
        min_length=1, description="Evaluation sets: FILE, or CONDITION=FILE to label all its items (a FILE may be a "
        "dataset split on the Hub, hf:ORG/NAME[@REVISION][:SPLIT])."
    )
    train_lang: str = Field(default="en", description="The training language, which labels items by condition.")
    pairing: str | None = Field(
        default=None,
        description="The interlingual.jsonl of `crossknow generate` that links each item to its pair's document in "
        "the other language, for every set (unset: each set's own, beside its file or one directory up, where there "
        "is one). A linked item of another language is interlingual only when its partner is in --train-lang.",
    )
    rule: Literal["adaxeval", "lm-eval"] = Field(
        default="adaxeval", description="Scoring rule: 'adaxeval' (the paper's) or 'lm-eval' (lm-evaluation-harness's)."
    )
    boundary: Boundary = Field(default="moved", description=BOUNDARY_HELP)
    batch_size: Annotated[int, VOLATILE] = Field(
        default=8, ge=1, description="Items per forward pass; does not change the numbers."
    )
    prune: Annotated[bool, VOLATILE] = Field(default=False, description=PRUNE_HELP)

    @model_validator(mode="after")
    def _boundary_suits_the_rule(self) -> TraceConfig:
        """Refuse `--boundary literal` with a rule other than adaxeval now, before any file is written."""
        from crossknow.scoring.rules import check_boundary  # pandas underneath: not at CLI start-up

        check_boundary(self.rule, self.boundary)
        return self

    @model_validator(mode="after")
    def _prune_has_hub_revisions(self) -> TraceConfig:
        check_prune(self.prune, self.checkpoints.specs)
        return self
