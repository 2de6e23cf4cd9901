"""Checkpoint series on the Hugging Face Hub: a repository's revisions by pattern, fetched one at a time.

`hf:ORG/NAME@PATTERN` names every branch or tag of the repository whose name matches PATTERN (shell-style,
`stage1-step*`), or any of a comma-separated list of names and patterns. The Hub lists the revisions; under
HF_HUB_OFFLINE=1 the local Hugging Face cache does. `fetch` brings one revision's model files (config, tokenizer,
weights: not optimizer states or other formats) into that cache and returns its snapshot directory; `prune` deletes
a revision from the cache again (files another revision shares stay), so that a sweep holds one revision at a time.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from crossknow.errors import CrossknowError
from crossknow.models.weights import weight_files

MODEL_FILES = ["*.json", "*.safetensors", "tokenizer*", "*.model", "*.txt", "*.tiktoken", "*.py"]
"""What `fetch` downloads of a revision: config, tokenizer, safetensors weights and modelling code (for
--trust-remote-code) (crossknow's choice: a training repository's revisions often hold optimizer states and other
weight formats too, which scoring never reads)."""
BIN_WEIGHTS = "pytorch_model*.bin"
"""Fetched as well only when a revision has no safetensors weights."""


def is_series(revision: str) -> bool:
    """Whether a spec's revision names several revisions (a pattern or a comma-separated list)."""
    return "," in revision or any(char in revision for char in "*?[")


def hub_revision(spec: str) -> tuple[str, str] | None:
    """(repository, revision) of an `hf:ORG/NAME@REVISION` spec that names a Hub repository, else None."""
    if not spec.startswith("hf:") or "@" not in spec:
        return None
    repo, _, revision = spec[3:].rpartition("@")
    return None if Path(repo).exists() else (repo, revision)


def _hub() -> Any:
    """huggingface_hub, with its `constants` and `errors` modules loaded (read at call time: tests and users set
    HF_HUB_CACHE and HF_HUB_OFFLINE)."""
    try:
        import huggingface_hub
        from huggingface_hub import constants, errors  # noqa: F401 - loaded as attributes of the package
    except ImportError as error:  # pragma: no cover - exercised only without the hf extra
        from crossknow.errors import MissingDependencyError

        raise MissingDependencyError("huggingface_hub", "hf", "Hub checkpoint series") from error
    return huggingface_hub


def _cached_repo(repo: str) -> tuple[Any, Any]:
    """(the scan of the local Hugging Face cache, `repo`'s model repository in it); either None where absent."""
    hub = _hub()
    try:
        info = hub.scan_cache_dir(hub.constants.HF_HUB_CACHE)
    except hub.CacheNotFound:
        return None, None
    found = [cached for cached in info.repos if cached.repo_id == repo and cached.repo_type == "model"]
    return info, found[0] if found else None


def _cached_revisions(repo: str) -> dict[str, str]:
    """Revision name -> commit of `repo` in the local Hugging Face cache."""
    _, cached = _cached_repo(repo)
    if cached is None:
        raise CrossknowError(f"hf:{repo}: not in the Hugging Face cache ({_hub().constants.HF_HUB_CACHE}), and "
                             "HF_HUB_OFFLINE is set")
    return {ref: revision.commit_hash for revision in cached.revisions for ref in revision.refs}


def revisions(repo: str) -> dict[str, str]:
    """Branch or tag name -> commit of every revision of `repo`: from the Hub, or from the cache under
    HF_HUB_OFFLINE."""
    hub = _hub()
    if hub.constants.HF_HUB_OFFLINE:
        return _cached_revisions(repo)
    try:
        refs = hub.HfApi().list_repo_refs(repo)
    except (OSError, hub.errors.HfHubHTTPError) as error:
        raise CrossknowError(f"hf:{repo}: cannot list its revisions on the Hub ({error}); with HF_HUB_OFFLINE=1 "
                             "the revisions in the local Hugging Face cache are used") from error
    return {ref.name: ref.target_commit for ref in [*refs.branches, *refs.tags]}


def matching_revisions(repo: str, pattern: str) -> list[str]:
    """The names of `repo`'s revisions that match `pattern` (names and shell-style patterns, comma-separated)."""
    names = revisions(repo)
    parts = [part.strip() for part in pattern.split(",") if part.strip()]
    chosen = sorted(name for name in names if any(fnmatchcase(name, part) for part in parts))
    if not chosen:
        shown = ", ".join(sorted(names)[:12]) + (" ..." if len(names) > 12 else "")
        raise CrossknowError(f"hf:{repo}@{pattern}: no revision matches (the repository has {shown or 'none'})")
    return chosen


def fetch(repo: str, revision: str) -> Path:
    """The snapshot directory of `repo` at `revision` in the Hugging Face cache, its model files downloaded (or
    found there, under HF_HUB_OFFLINE)."""
    hub = _hub()
    try:
        path = Path(hub.snapshot_download(repo, revision=revision, allow_patterns=MODEL_FILES))
        if not weight_files(path):
            path = Path(hub.snapshot_download(repo, revision=revision, allow_patterns=[*MODEL_FILES, BIN_WEIGHTS]))
    except (OSError, ValueError, hub.errors.HfHubHTTPError) as error:
        raise CrossknowError(f"hf:{repo}@{revision}: cannot fetch it: {error}") from error
    if not weight_files(path):
        raise CrossknowError(f"hf:{repo}@{revision}: no safetensors or pytorch_model*.bin weights in it")
    return path


def prune(repo: str, revision: str) -> int:
    """Delete `repo`'s `revision` from the Hugging Face cache (blobs that other revisions use stay); the bytes freed."""
    info, cached = _cached_repo(repo)
    commits = [cached_revision.commit_hash for cached_revision in (cached.revisions if cached else ())
               if revision in cached_revision.refs or cached_revision.commit_hash == revision]
    if not commits:
        return 0
    strategy = info.delete_revisions(*commits)
    strategy.execute()
    return strategy.expected_freed_size
