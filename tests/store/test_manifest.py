"""The stage manifest: constant-cost appends, torn last lines after a kill, older layouts, the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import crossknow.store.manifest as manifest_module
from crossknow.errors import CrossknowError
from crossknow.store.manifest import TAIL
from crossknow.store.run_dir import ShardedTable

SCHEMA = pa.schema([("key", pa.string()), ("value", pa.float64())])


def _table(key: str) -> pa.Table:
    return pa.Table.from_pylist([{"key": key, "value": 1.0}], schema=SCHEMA)


def _bytes_written() -> int:
    """Bytes this process has passed to write calls so far (Linux: /proc/self/io)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/self/io")


def _keys(table: pa.Table) -> list[str]:
    return table.column("key").to_pylist()


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts bytes through Linux's /proc/self/io")
@pytest.mark.may_skip
def test_an_append_writes_as_many_bytes_at_the_300th_shard_as_at_the_first(tmp_path):
    """The old manifest was rewritten whole on every append: appending shard N wrote all N shards'
    keys again (about 19 kB at N=300 here, against a 1 kB shard), quadratic over a run."""
    stage = ShardedTable(tmp_path / "scores")
    manifest = tmp_path / "scores" / "manifest.json"
    written, sizes = [], []
    for index in range(300):
        before = _bytes_written()
        stage.append(_table(f"item-{index:05d}"), [f"item-{index:05d}"])
        written.append(_bytes_written() - before)
        sizes.append(manifest.stat().st_size)

    early, late = written[1:51], written[-50:]
    assert max(late) <= max(early) + 64, (early, late)
    # The manifest grows by exactly one line per shard (every key has the same length here) ...
    growth = {b - a for a, b in zip(sizes[1:-1], sizes[2:], strict=True)}
    assert len(growth) == 1
    line = json.dumps({"file": "shard-000299.parquet", "keys": ["item-00299"], "rows": 1}).encode()
    assert growth == {len(line) + 2}
    # ... and stays one JSON document that any reader parses.
    shards = json.loads(manifest.read_text())["shards"]
    assert [s["keys"] for s in shards] == [[f"item-{i:05d}"] for i in range(300)]
    assert stage.done_keys() == {f"item-{i:05d}" for i in range(300)}


def _three_shards(directory: Path) -> tuple[ShardedTable, bytes, bytes]:
    """A stage with shards a and b committed and the bytes an append of shard c adds; returns the
    stage, the manifest after a and b, and the manifest after c."""
    stage = ShardedTable(directory)
    stage.append(_table("a"), ["a"])
    stage.append(_table("b"), ["b"])
    two = (directory / "manifest.json").read_bytes()
    stage.append(_table("c"), ["c"])
    three = (directory / "manifest.json").read_bytes()
    return stage, two, three


@pytest.mark.parametrize("cut", [1, 2, 3, 10, -1])
def test_a_manifest_torn_during_an_append_keeps_every_whole_line(tmp_path, cut):
    """kill -9 (or a power loss) during the write of shard c's line: the line is cut `cut` bytes into
    the new text (-1: the line whole, the closing bracket missing). Shards a and b stay committed; c
    counts only when its line is whole (its shard file was written before); the next append repairs
    the file."""
    directory = tmp_path / "scores"
    _, two, three = _three_shards(directory)
    start = len(two) - len(TAIL)
    new_text = three[start:]
    torn = two[:start] + (new_text[:cut] if cut > 0 else new_text[: -len(TAIL) + 1])
    (directory / "manifest.json").write_bytes(torn)
    with pytest.raises(json.JSONDecodeError):
        json.loads(torn)

    resumed = ShardedTable(directory)
    expected = ["a", "b", "c"] if cut < 0 else ["a", "b"]
    assert resumed.done_keys() == set(expected)
    assert _keys(resumed.read(SCHEMA)) == expected

    resumed.append(_table("d"), ["d"])
    shards = json.loads((directory / "manifest.json").read_text())["shards"]
    assert [s["keys"] for s in shards] == [[k] for k in [*expected, "d"]]
    assert [s["file"] for s in shards] == [f"shard-{i:06d}.parquet" for i in range(len(shards))]
    # d took c's place when c was not committed: the orphan shard file was overwritten.
    assert _keys(ShardedTable(directory).read(SCHEMA)) == [*expected, "d"]
    # And the repaired file takes constant-cost appends again.
    resumed.append(_table("e"), ["e"])
    assert json.loads((directory / "manifest.json").read_text())["shards"][-1]["keys"] == ["e"]


def test_a_manifest_of_an_older_crossknow_is_read_then_converted(tmp_path):
    """Before this layout the manifest was indented JSON rewritten whole; such a run resumes."""
    directory = tmp_path / "scores"
    directory.mkdir()
    shards = []
    for index, key in enumerate(["x", "y"]):
        name = f"shard-{index:06d}.parquet"
        pq.write_table(_table(key), directory / name)
        shards.append({"file": name, "keys": [key], "rows": 1})
    (directory / "manifest.json").write_text(json.dumps({"shards": shards}, indent=2) + "\n")

    stage = ShardedTable(directory)
    assert stage.done_keys() == {"x", "y"}
    stage.append(_table("z"), ["z"])
    text = (directory / "manifest.json").read_text()
    assert json.loads(text)["shards"] == [*shards, {"file": "shard-000002.parquet", "keys": ["z"], "rows": 1}]
    assert len(text.splitlines()) == 2 + 3  # the one-line-per-shard layout
    assert _keys(ShardedTable(directory).read(SCHEMA)) == ["x", "y", "z"]


def test_done_keys_parses_the_manifest_once_until_it_changes(tmp_path, monkeypatch):
    directory = tmp_path / "scores"
    writer = ShardedTable(directory)
    for key in "abc":
        writer.append(_table(key), [key])

    parses = []
    real_loads = json.loads
    monkeypatch.setattr(manifest_module.json, "loads", lambda data: parses.append(1) or real_loads(data))
    reader = ShardedTable(directory)
    for _ in range(50):
        assert reader.done_keys() == {"a", "b", "c"}
    assert len(parses) == 1
    writer.append(_table("d"), ["d"])  # another handle commits: the reader sees it
    assert reader.done_keys() == {"a", "b", "c", "d"}
    assert len(parses) == 2
    reader.append(_table("e"), ["e"])  # its own appends need no reparse
    assert reader.done_keys() == {"a", "b", "c", "d", "e"}
    assert len(parses) == 2


def test_done_keys_is_a_copy(tmp_path):
    stage = ShardedTable(tmp_path / "scores")
    stage.append(_table("a"), ["a"])
    stage.done_keys().add("intruder")
    assert stage.done_keys() == {"a"}


def test_a_file_that_is_not_a_manifest_is_a_clear_error(tmp_path):
    directory = tmp_path / "scores"
    directory.mkdir()
    (directory / "manifest.json").write_text("hello\n")
    with pytest.raises(CrossknowError, match="manifest is damaged"):
        ShardedTable(directory).done_keys()
    (directory / "manifest.json").write_text('{"rows": 3}\n')
    with pytest.raises(CrossknowError, match="not a crossknow manifest"):
        ShardedTable(directory).done_keys()
