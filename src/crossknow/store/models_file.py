"""models.json: what each model spec of a run directory resolved to, written only by the run's `ClientPool`.

One entry per label: a generator's spec, written with its server ('openai:MODEL@URL': the same name on two servers is
two models) -> {"model": "backend:model id", "prompt_format": "chat" | "completion"} (how its stages asked it);
"SPEC (scorer)" -> {"model": "backend:model id"} for a scorer (one spec may generate on one backend and score on
another). Runs written before this format kept "backend:model id#format" strings; they are
read as entries.
"""

from __future__ import annotations

import json
from pathlib import Path

from crossknow.errors import CrossknowError
from crossknow.store.atomic import atomic_write_json

MODELS_FILE = "models.json"

ModelEntry = dict[str, str]
"""{"model": "backend:model id"}, with "prompt_format" for a generator."""


def scorer_label(spec: str) -> str:
    """The models.json label of `spec`'s scorer."""
    return f"{spec} (scorer)"


def read_models(run_dir: Path) -> dict[str, ModelEntry]:
    """Label -> entry of every model `run_dir` has used ({} before the first)."""
    path = Path(run_dir) / MODELS_FILE
    if not path.is_file():
        return {}
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise CrossknowError(f"{path}: not a readable models file ({error})") from error
    if not isinstance(stored, dict) or not all(isinstance(v, str | dict) for v in stored.values()):
        raise CrossknowError(f"{path}: expected an object of label -> model entry")
    return {label: _entry(value) for label, value in stored.items()}


def _entry(value: str | ModelEntry) -> ModelEntry:
    if isinstance(value, dict):
        return value
    model, _, prompt_format = value.partition("#")  # the older "backend:model id#format" string
    return {"model": model} | ({"prompt_format": prompt_format} if prompt_format else {})


def record_model(run_dir: Path, label: str, backend: str, model_id: str, prompt_format: str | None = None) -> None:
    """Add or update `label`'s entry in `run_dir`'s models.json (written atomically). A label that resolves to
    another model than the run recorded (another engine, version or revision) is an error: the run's results would
    mix two models."""
    models = read_models(run_dir)
    entry = {"model": f"{backend}:{model_id}"} | ({"prompt_format": prompt_format} if prompt_format else {})
    recorded = models.get(label, {}).get("model")
    if recorded is not None and recorded != entry["model"]:
        raise CrossknowError(f"{run_dir}: {label} ran as {recorded} in this run and would now run as "
                             f"{entry['model']}; resume it with the same engine and model (--generator-backend "
                             "picks the engine of a GGUF model), or use another run directory")
    if models.get(label) != entry:
        atomic_write_json(Path(run_dir) / MODELS_FILE, models | {label: entry})
