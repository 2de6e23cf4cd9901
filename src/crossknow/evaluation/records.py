"""The records `crossknow evaluate` saves: its config, the model it used, and its metrics."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from crossknow.data.schemas import Record
from crossknow.models.access import LOADING, ModelRole, RoleConfig, RoleKeys
from crossknow.models.boundary import BOUNDARY_HELP, Boundary
from crossknow.store.config_keys import VOLATILE


class EvaluateConfig(RoleConfig):
    """Everything that decides an evaluation's numbers (config.yaml, with the resolved format and rule)."""

    ROLES = (RoleKeys("model", own=("base_url", "api_key_env", "device", "dtype", *LOADING)),)

    model: ModelRole = Field(
        default=ModelRole(spec="default"),
        description="Model spec: default (the embedded Gemma 3 270M), hf:PATH_OR_ID[@REV], gguf:FILE or openai:MODEL.",
    )
    data: Annotated[str, VOLATILE] = Field(
        description="Data file (AdaXEval, Pitfalls, ECLEKTIC or crossknow JSONL), a dataset split on the Hub "
        "(hf:ORG/NAME[@REVISION][:SPLIT]), or 'sample' for the sample shipped with crossknow."
    )
    format: Literal["auto", "adaxeval", "pitfalls", "eclektic", "jsonl"] = Field(
        default="auto", description="Input format; 'auto' detects it from the file."
    )
    rule: Literal["auto", "adaxeval", "lm-eval"] = Field(
        default="auto",
        description="Scoring rule; 'auto' picks adaxeval for AdaXEval and our JSONL, lm-eval for Pitfalls.",
    )
    boundary: Boundary = Field(default="moved", description=BOUNDARY_HELP)
    limit: int | None = Field(
        default=None, ge=1, description="Score only the first N usable items (pairs for Pitfalls)."
    )
    batch_size: Annotated[int, VOLATILE] = Field(
        default=8, ge=1,
        description="Items per forward pass (halved on CUDA out-of-memory); does not change the numbers.",
    )
    float32_decisions: bool = Field(
        default=True,
        description="With a bfloat16 or float16 dtype: score again in float32 the items whose prediction the "
        "low precision could change (crossknow's choice; see docs/speed.md). Off: plain low precision.",
    )

    @model_validator(mode="after")
    def _literal_needs_a_local_model(self) -> EvaluateConfig:
        """The literal boundary scores token ids that a server, which tokenises text, cannot be sent."""
        if self.boundary == "literal" and self.model.spec.startswith("openai:"):
            raise ValueError(
                "--boundary literal needs the model's tokenizer on this machine (a local model: default, hf:, "
                "gguf:); an OpenAI-compatible server tokenises the text it is sent"
            )
        return self


class ModelInfo(Record):
    """The model a run used (model.json)."""

    spec: str = Field(description="The spec as given.")
    backend: str = Field(description="Backend name: default, hf, gguf or openai.")
    model_id: str = Field(description="Resolved model identity (path, hub id and revision, or server model).")
    dtype: str = Field(description="Compute dtype, or 'server' for remote backends.")
    weights: str | None = Field(
        default=None, description="Identity of the weights: each weight file's SHA-256 for a local model directory, "
        "else the spec (a hub revision or a server model)."
    )


class EvaluateMetrics(Record):
    """metrics.json: accuracy under each normalisation, overall and per group."""

    accuracy: dict[str, dict[str, float]] = Field(
        description="accuracy[normalisation][group]; normalisations mean_token, sum, per_char, per_byte; "
        "groups 'all', 'lang=L', 'kind=K', 'lang=L,kind=K'."
    )
    n_items: dict[str, int] = Field(description="Items scored per group.")
    n_invalid: int = Field(description="Input records reported as unusable (see invalid.jsonl); not scored.")
    n_unscorable: int = Field(
        default=0, description="Items the model could not score (too long, a boundary merge, a non-finite loss); "
        "listed in invalid.jsonl with the reason, and counted in no accuracy."
    )
    rule: str = Field(description="The scoring rule used.")
    boundary: str = Field(
        description="The boundary rule used: 'moved' (crossknow's) or 'literal' (the AdaXEval authors' tokenisation)."
    )
    format: str = Field(description="The input format read.")
    model: ModelInfo = Field(description="The model used.")
    crossknow_version: str = Field(description="crossknow's version.")
    items_scored_this_run: int = Field(description="Items scored by this invocation (fewer when it resumed).")
    items_rescored_float32: int = Field(
        default=0, description="Items scored again in float32 because the low-precision dtype left their prediction "
        "open (float32_decisions); over the whole run, resumed invocations included."
    )
    seconds: float = Field(description="Wall-clock seconds of this invocation, model loading included.")
