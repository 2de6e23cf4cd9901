"""Record tables (typed rows in a stage's shards) and run-directory layouts (recorded, migrated, refused)."""

from __future__ import annotations

import json

import pytest
import yaml
from pydantic import BaseModel

from crossknow.errors import CrossknowError
from crossknow.store.layout import LAYOUT_FILE, Layout, Table
from crossknow.store.run_dir import RunDir


class Note(BaseModel):
    name: str
    score: float
    tags: list[str] = []


NOTES = Table("notes", Note, key=lambda note: note.name)


def test_rows_come_back_typed_in_commit_order_across_instances(tmp_path):
    first = NOTES.open(tmp_path)
    first.commit([Note(name="b", score=0.5, tags=["日本語"]), Note(name="a", score=1.0)])
    first.commit([])  # no shard for nothing
    assert first.rows() == [Note(name="b", score=0.5, tags=["日本語"]), Note(name="a", score=1.0)]
    other = NOTES.open(tmp_path)
    other.commit([Note(name="c", score=-2.0)])
    # the first instance sees the other's commit: it reads again when the manifest changed
    assert [note.name for note in first.rows()] == ["b", "a", "c"] and first.keys() == {"a", "b", "c"}
    assert len(first.table) == 2
    assert sorted(path.name for path in (tmp_path / "stages" / "notes").iterdir()) == [
        "manifest.json", "shard-000000.parquet", "shard-000001.parquet"]


def test_a_new_directory_records_its_layout(tmp_path):
    layout = Layout("toy", 3, (NOTES,))
    with RunDir(tmp_path) as run:
        run.open({"a": 1}, {}, layout=layout)
    assert json.loads((tmp_path / LAYOUT_FILE).read_text()) == {
        "command": "toy", "version": 3, "tables": {"notes": "tests.store.test_layout.Note"}}


def test_an_older_directory_is_migrated_once_step_by_step(tmp_path):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"a": 1}))  # a run of before layouts: version 1
    (tmp_path / "notes.jsonl").write_text('{"name": "x", "score": 2.0}\n')
    steps = []

    def one_to_two(run):
        steps.append((1, run))
        NOTES.open(run).commit([Note.model_validate_json((run / "notes.jsonl").read_text())])

    layout = Layout("toy", 3, (NOTES,), {1: one_to_two, 2: lambda run: steps.append((2, run))})
    with RunDir(tmp_path) as run:
        run.open({"a": 1}, {}, layout=layout)
    assert steps == [(1, tmp_path), (2, tmp_path)]
    assert json.loads((tmp_path / LAYOUT_FILE).read_text())["version"] == 3
    with RunDir(tmp_path) as run:
        run.open({"a": 1}, {}, layout=layout)
    assert len(steps) == 2
    # the migrated rows are the run's results: another config is refused, not recorded over them
    with pytest.raises(CrossknowError, match="another config"), RunDir(tmp_path) as run:
        run.open({"a": 2}, {}, layout=layout)


def test_another_commands_or_a_newer_directory_is_refused_by_name(tmp_path):
    with RunDir(tmp_path) as run:
        run.open({}, {}, layout=Layout("toy", 2, (NOTES,)))
    with pytest.raises(CrossknowError, match="holds a toy run, not a other run"), RunDir(tmp_path) as run:
        run.open({}, {}, layout=Layout("other", 2, ()))
    with pytest.raises(CrossknowError, match=r"newer crossknow \(toy layout version 2; this one reads up to 1\)"), \
            RunDir(tmp_path) as run:
        run.open({}, {}, layout=Layout("toy", 1, (NOTES,)))


def test_a_version_without_its_migration_is_refused(tmp_path):
    (tmp_path / "config.yaml").write_text("{}")
    with pytest.raises(CrossknowError, match="cannot read a toy run directory of layout version 1"), \
            RunDir(tmp_path) as run:
        run.open({}, {}, layout=Layout("toy", 2, (NOTES,)))
    assert not (tmp_path / LAYOUT_FILE).exists()
