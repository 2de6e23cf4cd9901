"""Find the checkpoints of a sweep and the training step of each.

`--checkpoints` takes a `crossknow train` run directory (its starting model is step 0), a directory of
`checkpoint-STEP` or `step-STEP` sub-directories, one such directory, `default` (step 0), `hf:ID@REVISION`
(the step read from the revision: `step1000`, `stage1-step1000-tokens4B`, trailing digits), each of them
optionally prefixed with `STEP=`, or `hf:ID@PATTERN`: every revision of the Hub repository that matches
(`stage1-step*`, or names and patterns separated by commas; crossknow.models.hub_revisions).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from crossknow.data.guarded import load_yaml, parse_int
from crossknow.errors import CrossknowError
from crossknow.models.hub_revisions import is_series, matching_revisions

STEP_NAME = re.compile(r"^(?:checkpoint|step)[-_]?([0-9]+)$")
REVISION_STEP = re.compile(r"step[-_]?([0-9]+)")
TRAILING_DIGITS = re.compile(r"([0-9]+)$")


@dataclass(frozen=True)
class Checkpoint:
    """One model of a sweep."""

    step: int
    """Training step (0 = the model before training)."""
    spec: str
    """Model spec that loads it (default, hf:PATH or hf:ID@REVISION)."""
    label: str
    """How tables and figures name it."""


def _is_model_dir(path: Path) -> bool:
    """A transformers model directory, or a PEFT adapter's (a LoRA run's checkpoint), which scoring merges."""
    return (path / "config.json").exists() or (path / "adapter_config.json").exists()


def _is_complete(path: Path) -> bool:
    """A model directory with weights; a transformers Trainer checkpoint also needs trainer_state.json,
    which the Trainer writes last, so a checkpoint cut short by a kill is skipped."""
    has_weights = any(path.glob("*.safetensors")) or any(path.glob("pytorch_model*.bin"))
    trainer_done = not (path / "training_args.bin").exists() or (path / "trainer_state.json").exists()
    return _is_model_dir(path) and has_weights and trainer_done


def _step(digits: str, where: str) -> int:
    """The step that `digits` (of a name, a revision or a STEP= prefix) write; CrossknowError naming `where` for
    one past the 64-bit range that steps are stored in."""
    step = parse_int(digits)
    if step is None:
        shown = digits if len(digits) <= 24 else f"{digits[:12]}... ({len(digits)} digits)"
        raise CrossknowError(f"{where}: the step {shown} is past the 64-bit range")
    return step


def _sub_checkpoints(directory: Path) -> list[Checkpoint]:
    found = []
    for path in sorted(directory.iterdir()):
        match = STEP_NAME.match(path.name)
        if match and path.is_dir() and _is_complete(path):
            found.append(Checkpoint(_step(match.group(1), str(path)), f"hf:{path}", path.name))
    return found


def _revision_step(revision: str, where: str) -> int | None:
    """The step a revision's name holds (`step1000`, `stage1-step1000-tokens4B`, trailing digits), else None."""
    match = REVISION_STEP.search(revision) or TRAILING_DIGITS.search(revision)
    return _step(match.group(1), where) if match else None


def _series(source: str, step_given: bool) -> list[Checkpoint]:
    """The checkpoints of an `hf:ID@PATTERN` source: every matching revision of the repository, each with the step
    its name holds."""
    if step_given:
        raise CrossknowError(f"--checkpoints {source}: a STEP= prefix names one checkpoint, not a series")
    repo, _, pattern = source[3:].rpartition("@")
    found, stepless = [], []
    for revision in matching_revisions(repo, pattern):
        step = _revision_step(revision, f"--checkpoints {source}")
        if step is None:
            stepless.append(revision)
        else:
            found.append(Checkpoint(step, f"hf:{repo}@{revision}", revision))
    if stepless:
        raise CrossknowError(f"--checkpoints {source}: no step in the name of revision(s) {', '.join(stepless)}; "
                             "narrow the pattern, or name them one by one as STEP=hf:ID@REVISION")
    return found


def _one(source: str, step_given: bool = False) -> list[Checkpoint]:
    """The checkpoints `source` names; with `step_given` (a STEP= prefix), a name or revision need not hold a step."""
    step_text, sep, rest = source.partition("=")
    if sep and step_text.isascii() and step_text.isdigit() and not step_given:
        found = _one(rest, step_given=True)
        if len(found) != 1:
            raise CrossknowError(f"--checkpoints {source}: {rest} holds {len(found)} checkpoints, not one")
        return [Checkpoint(_step(step_text, f"--checkpoints {source}"), found[0].spec, found[0].label)]
    if source == "default":
        return [Checkpoint(0, "default", "base (default)")]
    if source.startswith("hf:") and "@" in source and is_series(source.rpartition("@")[2]):
        return _series(source, step_given)
    if source.startswith("hf:") and "@" in source:
        revision = source.rpartition("@")[2]
        step = _revision_step(revision, f"--checkpoints {source}")
        if step is None and not step_given:
            raise CrossknowError(f"--checkpoints {source}: no step in revision {revision!r}; write STEP={source}")
        return [Checkpoint(step or 0, source, revision)]
    path = Path(source[3:] if source.startswith("hf:") else source)
    if not path.is_dir():
        raise CrossknowError(f"--checkpoints {source}: not a directory, a default spec or an hf:ID@REVISION spec")
    config = path / "config.yaml"
    if config.exists() and (path / "checkpoints").is_dir():
        resolved = load_yaml(config) or {}
        base = resolved.get("model") if isinstance(resolved, dict) else None
        if not isinstance(base, str) or not base:
            raise CrossknowError(f"{config}: no 'model' entry; is {path} a crossknow train run?")
        return [Checkpoint(0, base, f"base ({base})"), *_sub_checkpoints(path / "checkpoints")]
    if _is_model_dir(path):
        if not _is_complete(path):
            raise CrossknowError(f"--checkpoints {source}: no weights, or a checkpoint whose save did not finish")
        match = STEP_NAME.match(path.name)
        if not match and not step_given:
            raise CrossknowError(f"--checkpoints {source}: no step in the name {path.name!r}; write STEP={source}")
        return [Checkpoint(_step(match.group(1), f"--checkpoints {source}") if match else 0, f"hf:{path}", path.name)]
    found = _sub_checkpoints(path)
    if not found:
        raise CrossknowError(f"--checkpoints {source}: no checkpoint-STEP or step-STEP model directories in it")
    return found


def discover_checkpoints(sources: list[str]) -> list[Checkpoint]:
    """Every checkpoint the sources name, sorted by step; two checkpoints at one step are an error."""
    found = sorted((c for source in sources for c in _one(source)), key=lambda c: c.step)
    steps = [c.step for c in found]
    duplicates = sorted({s for s in steps if steps.count(s) > 1})
    if duplicates:
        raise CrossknowError(f"--checkpoints: several checkpoints at step(s) {duplicates}; give each step once")
    if not found:
        raise CrossknowError("--checkpoints: no checkpoints found")
    return found
