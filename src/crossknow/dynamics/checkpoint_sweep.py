"""The checkpoint loop shared by `trace` (items) and `trace-sequences` (training sequences).

One loaded model serves every local checkpoint of one architecture (crossknow.models.sweep_scorers);
each checkpoint is recorded in checkpoints.json before it is scored, so that a resumed run checks that
no checkpoint changed under it; work already committed is skipped; progress counts committed work.
A Hub revision is fetched into the Hugging Face cache when its turn comes, and with `prune` deleted from it
once its work is committed (crossknow.models.hub_revisions).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from crossknow.dynamics.checkpoints import Checkpoint
from crossknow.errors import CrossknowError, PrefixCacheMiss
from crossknow.models.hub_revisions import fetch, hub_revision
from crossknow.models.hub_revisions import prune as prune_revision
from crossknow.models.protocol import Scorer
from crossknow.models.registry import ModelOptions
from crossknow.models.specs import weights_hash
from crossknow.models.sweep_scorers import SweepScorers
from crossknow.scoring.stage import ModelPoint
from crossknow.store.atomic import atomic_write_json

W = TypeVar("W")

CHECKPOINTS_FILE = "checkpoints.json"
"""Each scored checkpoint's spec, label and weights hash, by step."""


def record_checkpoint(path: Path, checkpoint: Checkpoint, weights: str) -> None:
    """Record `checkpoint`'s spec, label and `weights` hash in checkpoints.json at `path`, or check them against
    the record of a run that began earlier (a changed checkpoint is an error)."""
    recorded = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    entry = {"spec": checkpoint.spec, "label": checkpoint.label, "weights": weights}
    previous = recorded.get(str(checkpoint.step))
    if previous and previous != entry:
        raise CrossknowError(f"checkpoint at step {checkpoint.step} changed since this trace began ({checkpoint.spec})")
    recorded[str(checkpoint.step)] = entry
    atomic_write_json(path, recorded)


def sweep_checkpoints(
    out: Path,
    checkpoints: Sequence[Checkpoint],
    work: Sequence[W],
    key: Callable[[ModelPoint, W], str],
    done: set[str],
    options: ModelOptions,
    score: Callable[[Scorer, list[W], ModelPoint, Callable[[int], None]], None],
    *,
    reuse_frozen: bool = True,
    prune: bool = False,
    on_progress: Callable[[int, int, str], None] | None = None,
) -> None:
    """Call `score(scorer, todo, point, advance)` for each checkpoint with work whose `key` is not in `done`.

    `advance(n)` is for the scorer loop to call after committing n units; `on_progress(done, total, label)`
    then reports. A `PrefixCacheMiss` (frozen blocks that could not be replayed) drops the reuse and scores
    the checkpoint again in full (committed work is skipped by `score` itself). With `prune`, every Hub revision
    but the last is deleted from the cache once its work is committed (also one a killed run had finished)."""
    total, finished = len(checkpoints) * len(work), 0
    pending = [c for c in checkpoints if any(key(ModelPoint(c.step, c.label), w) not in done for w in work)]
    scorers = SweepScorers([c.spec for c in pending], options, reuse=reuse_frozen)
    try:
        for checkpoint in checkpoints:
            at = ModelPoint(checkpoint.step, checkpoint.label)
            todo = [w for w in work if key(at, w) not in done]
            finished += len(work) - len(todo)
            revision = hub_revision(checkpoint.spec)
            if todo:
                if on_progress and revision:
                    on_progress(finished, total, f"{checkpoint.label} (fetching)")
                # A Hub revision is scored from its snapshot directory, fetched now: its weights switch into the
                # loaded model like a local checkpoint's and are identified by their SHA-256.
                spec = f"hf:{fetch(*revision)}" if revision else checkpoint.spec
                record_checkpoint(out / CHECKPOINTS_FILE, checkpoint, weights_hash(spec))
                scorer = scorers.scorer_for(spec)

                def advance(n: int, label: str = checkpoint.label) -> None:
                    nonlocal finished
                    finished += n
                    if on_progress:
                        on_progress(finished, total, label)

                try:
                    score(scorer, todo, at, advance)
                except PrefixCacheMiss:
                    scorers.drop_reuse()
                    score(scorer, todo, at, advance)
            if prune and revision and checkpoint is not checkpoints[-1]:
                prune_revision(*revision)
    finally:
        scorers.close()
