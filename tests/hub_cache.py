"""A Hugging Face cache laid out as huggingface_hub lays out a downloaded repository, built in a test.

`models--ORG--NAME/` (`datasets--ORG--NAME/` for a dataset) holds `blobs/` (each file once, named by its SHA-256),
`snapshots/COMMIT/` (links to the blobs) and `refs/REVISION` (the commit of a branch). With HF_HUB_CACHE pointing at
it and HF_HUB_OFFLINE=1, huggingface_hub lists, fetches and deletes these revisions as it would a downloaded
repository's.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def write_hub_cache(cache: Path, repo: str, revisions: dict[str, Path], kind: str = "model") -> dict[str, str]:
    """Lay each revision (name -> a directory whose files, subdirectories included, it holds) of the `kind`
    ('model' or 'dataset') repository out in `cache`; name -> its commit."""
    root = cache / f"{kind}s--{repo.replace('/', '--')}"
    commits = {}
    for name, source in revisions.items():
        commit = hashlib.sha1(f"{repo}@{name}".encode()).hexdigest()
        snapshot = root / "snapshots" / commit
        snapshot.mkdir(parents=True)
        for path in sorted(file for file in source.rglob("*") if file.is_file()):
            data = path.read_bytes()
            blob = root / "blobs" / hashlib.sha256(data).hexdigest()
            blob.parent.mkdir(exist_ok=True)
            if not blob.exists():
                blob.write_bytes(data)
            link = snapshot / path.relative_to(source)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.path.relpath(blob, link.parent))
        ref = root / "refs" / name
        ref.parent.mkdir(parents=True, exist_ok=True)
        ref.write_text(commit)
        commits[name] = commit
    return commits


def hub_environment(cache: Path) -> dict[str, str]:
    """The environment of a process that reads `cache` as its Hugging Face cache, offline."""
    return {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
