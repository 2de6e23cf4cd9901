"""Data on the Hugging Face Hub: `hf:ORG/NAME[@REVISION][:SPLIT]` wherever a command reads a data file.

`data_file` is the one place where a command turns its data argument into a local file, before reading and hashing
it. The dataset repository comes into the Hugging Face cache (under HF_HUB_OFFLINE=1 it must be there already) and
`datasets` says which files make each split (the dataset card's configuration, else the files' names). crossknow's
choice: a split that is one JSON or JSON-lines file is read as published (its bytes, its SHA-256, and its name,
which gives a Pitfalls pair file its language); any other split (Parquet shards, CSV, several files) is read by
`datasets` and written once, as JSON lines, into crossknow's cache under the snapshot's commit, each row without its
null fields (a column that a row lacks is null in a columnar file; the readers take it as absent).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crossknow.errors import CrossknowError, MissingDependencyError
from crossknow.store.atomic import atomic_write
from crossknow.store.cache_dir import cache_dir

PREFIX = "hf:"
AS_PUBLISHED = (".json", ".jsonl")
"""Suffixes of a one-file split that is read as it is, not converted."""


@dataclass(frozen=True)
class HubData:
    """A split of a dataset repository: `hf:REPO[@REVISION][:SPLIT]` (REVISION None: main; SPLIT None: the only
    one)."""

    repo: str
    revision: str | None
    split: str | None

    @classmethod
    def parse(cls, spec: str) -> HubData:
        """Read `spec`; a repository that is not ORG/NAME is an error that shows the form."""
        address, has_split, split = spec.removeprefix(PREFIX).partition(":")
        repo, has_revision, revision = address.partition("@")
        owner, slash, name = repo.partition("/")
        if (not (owner and slash and name) or "/" in name or (has_split and not split)
                or (has_revision and not revision)):
            raise CrossknowError(f"{spec}: a dataset on the Hub is hf:ORG/NAME[@REVISION][:SPLIT]")
        return cls(repo, revision or None, split or None)


def data_file(value: str | Path) -> Path:
    """The local file of a data argument: a path as given (the caller checks that it exists), or the file that
    holds a Hub dataset's split (fetched, and converted to JSON lines where it is not one JSON file)."""
    if not (isinstance(value, str) and value.startswith(PREFIX)):
        return Path(value)
    data = HubData.parse(str(value))
    snapshot = _snapshot(data, str(value))
    split, files = _split_files(snapshot, data, str(value))
    if len(files) == 1 and files[0].suffix in AS_PUBLISHED:
        return files[0]
    target = cache_dir() / "hub-data" / data.repo.replace("/", "--") / snapshot.name / f"{split}.jsonl"
    if not target.is_file():
        _write_json_lines(snapshot, split, target, str(value))
    return target


def _snapshot(data: HubData, spec: str) -> Path:
    """The snapshot directory of the dataset repository in the Hugging Face cache, downloaded where it is not
    there."""
    try:
        from huggingface_hub import constants, errors, snapshot_download
    except ImportError as error:  # pragma: no cover - exercised only without the hf extra
        raise MissingDependencyError("huggingface_hub", "hf", "Data on the Hub") from error
    try:
        return Path(snapshot_download(data.repo, repo_type="dataset", revision=data.revision))
    except (OSError, ValueError, errors.HfHubHTTPError) as error:
        offline = " (HF_HUB_OFFLINE is set: only the local Hugging Face cache is read)" \
            if constants.HF_HUB_OFFLINE else ""
        raise CrossknowError(f"{spec}: cannot fetch the dataset{offline}: {error}") from error


def _datasets() -> Any:
    try:
        import datasets
    except ImportError as error:  # pragma: no cover - exercised only without the hf extra
        raise MissingDependencyError("datasets", "hf", "Data on the Hub") from error
    return datasets


def _split_files(snapshot: Path, data: HubData, spec: str) -> tuple[str, list[Path]]:
    """(the split's name, its data files) as `datasets` resolves the repository's layout; a missing split, or no
    split named where there are several, is an error that lists them."""
    datasets = _datasets()
    try:
        builder = datasets.load_dataset_builder(str(snapshot))
    except (OSError, ValueError, datasets.exceptions.DatasetsError) as error:
        raise CrossknowError(f"{spec}: datasets cannot read the repository's layout: {error}") from error
    splits = {str(name): [Path(file) for file in files] for name, files in (builder.config.data_files or {}).items()}
    named = ", ".join(sorted(splits)) or "none"
    if data.split is None and len(splits) != 1:
        raise CrossknowError(f"{spec}: the dataset has the splits {named}; name one as hf:{data.repo}:SPLIT")
    split = data.split if data.split is not None else next(iter(splits))
    if split not in splits:
        raise CrossknowError(f"{spec}: no split {split!r} (the dataset has {named})")
    return split, splits[split]


def _write_json_lines(snapshot: Path, split: str, target: Path, spec: str) -> None:
    """Read the split with `datasets` and write its rows, null fields left out, to `target` as JSON lines,
    atomically."""
    datasets = _datasets()

    def write(handle) -> None:
        for row in rows:
            present = {key: value for key, value in row.items() if value is not None}
            handle.write(json.dumps(present, ensure_ascii=False, default=str) + "\n")

    with tempfile.TemporaryDirectory() as arrow_cache:  # datasets' Arrow copy is not kept: the JSON lines are
        try:
            rows = datasets.load_dataset(str(snapshot), split=split, cache_dir=arrow_cache)
        except (OSError, ValueError, datasets.exceptions.DatasetsError) as error:
            raise CrossknowError(f"{spec}: datasets cannot read the split: {error}") from error
        atomic_write(target, write)
