"""Run directories: sharded stage outputs with a manifest, config checks on resume, atomic writes."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

import crossknow.store.manifest as manifest_module
from crossknow.errors import CrossknowError
from crossknow.store.atomic import atomic_write, atomic_write_json, atomic_write_text
from crossknow.store.run_dir import RunDir, ShardedTable

SCHEMA = pa.schema([("key", pa.string()), ("value", pa.float64())])


def _table(*rows: tuple[str, float]) -> pa.Table:
    return pa.Table.from_pylist([{"key": k, "value": v} for k, v in rows], schema=SCHEMA)


def _pairs(table: pa.Table) -> list[tuple[str, float]]:
    return [(row["key"], row["value"]) for row in table.to_pylist()]


# ---- ShardedTable -------------------------------------------------------------------------------


def test_empty_stage_reads_as_empty_table_with_schema(tmp_path):
    stage = ShardedTable(tmp_path / "stages" / "scores")
    assert stage.done_keys() == set()
    table = stage.read(SCHEMA)
    assert table.num_rows == 0
    assert table.schema.equals(SCHEMA)


def test_append_then_read_returns_rows_in_commit_order(tmp_path):
    stage = ShardedTable(tmp_path / "scores")
    stage.append(_table(("a", 1.0), ("a", 2.0)), ["a"])
    stage.append(_table(("c", 3.0)), ["c"])
    stage.append(_table(("b", 4.0), ("b", 5.0)), ["b"])

    assert stage.done_keys() == {"a", "b", "c"}
    assert _pairs(stage.read(SCHEMA)) == [("a", 1.0), ("a", 2.0), ("c", 3.0), ("b", 4.0), ("b", 5.0)]
    manifest = json.loads((tmp_path / "scores" / "manifest.json").read_text())
    assert [shard["rows"] for shard in manifest["shards"]] == [2, 1, 2]
    assert [shard["keys"] for shard in manifest["shards"]] == [["a"], ["c"], ["b"]]
    # Each named shard exists and holds exactly the rows the manifest says.
    for shard in manifest["shards"]:
        assert pq.read_table(tmp_path / "scores" / shard["file"]).num_rows == shard["rows"]


def test_a_fresh_handle_sees_what_another_committed(tmp_path):
    ShardedTable(tmp_path / "s").append(_table(("x", 1.5)), ["x"])
    again = ShardedTable(tmp_path / "s")
    assert again.done_keys() == {"x"}
    assert _pairs(again.read(SCHEMA)) == [("x", 1.5)]


def test_orphan_shard_from_a_crash_is_ignored_then_overwritten(tmp_path, monkeypatch):
    """A crash after the shard is written but before the manifest names it leaves an orphan file:
    it must count for nothing, and the resumed append must replace it without duplicating rows."""
    directory = tmp_path / "scores"
    stage = ShardedTable(directory)
    stage.append(_table(("a", 1.0)), ["a"])

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("killed between the shard write and the manifest write")

    with monkeypatch.context() as patch:
        patch.setattr(manifest_module.Manifest, "append", crash)
        with pytest.raises(KeyboardInterrupt):
            stage.append(_table(("b", 2.0), ("b", 2.5)), ["b"])

    orphan = directory / "shard-000001.parquet"
    assert orphan.exists(), "the simulated crash should have left the shard file behind"
    resumed = ShardedTable(directory)
    assert resumed.done_keys() == {"a"}
    assert _pairs(resumed.read(SCHEMA)) == [("a", 1.0)]

    # The resumed run scores "b" again (its numbers may differ slightly) and commits it.
    resumed.append(_table(("b", 20.0), ("b", 25.0)), ["b"])
    assert resumed.done_keys() == {"a", "b"}
    assert _pairs(resumed.read(SCHEMA)) == [("a", 1.0), ("b", 20.0), ("b", 25.0)]
    assert _pairs(pq.read_table(orphan)) == [("b", 20.0), ("b", 25.0)]
    assert sorted(p.name for p in directory.glob("*.parquet")) == ["shard-000000.parquet", "shard-000001.parquet"]


def test_orphan_shard_with_unrelated_keys_is_not_read(tmp_path):
    """An orphan written by hand (no manifest entry at all) is invisible to done_keys and read."""
    directory = tmp_path / "scores"
    stage = ShardedTable(directory)
    stage.append(_table(("a", 1.0)), ["a"])
    pq.write_table(_table(("zombie", 9.0)), directory / "shard-000001.parquet")
    assert stage.done_keys() == {"a"}
    assert _pairs(stage.read(SCHEMA)) == [("a", 1.0)]
    stage.append(_table(("c", 3.0)), ["c"])
    assert _pairs(stage.read(SCHEMA)) == [("a", 1.0), ("c", 3.0)]


# ---- RunDir.open --------------------------------------------------------------------------------

CONFIG = {"model": "default", "data": "sample", "limit": None, "batch_size": 8}
INPUTS = {"/data/sample.jsonl": "ab" * 32}


def _with_results(path) -> RunDir:
    """A run directory opened with CONFIG that has committed one shard."""
    run = RunDir(path)
    run.open(CONFIG, INPUTS, volatile=("batch_size",))
    run.stage("scores").append(_table(("a", 1.0)), ["a"])
    return run


def test_open_records_config_and_inputs(tmp_path):
    RunDir(tmp_path / "run").open(CONFIG, INPUTS)
    assert yaml.safe_load((tmp_path / "run" / "config.yaml").read_text()) == CONFIG
    assert json.loads((tmp_path / "run" / "inputs.json").read_text()) == INPUTS


def test_reopen_with_same_config_passes_and_keeps_results(tmp_path):
    _with_results(tmp_path / "run")
    again = RunDir(tmp_path / "run")
    again.open(dict(CONFIG), dict(INPUTS), volatile=("batch_size",))
    assert again.stage("scores").done_keys() == {"a"}


def test_reopen_with_changed_key_names_it(tmp_path):
    _with_results(tmp_path / "run")
    with pytest.raises(CrossknowError) as error:
        RunDir(tmp_path / "run").open(CONFIG | {"model": "hf:other"}, INPUTS, volatile=("batch_size",))
    message = str(error.value)
    assert "model" in message and "hf:other" in message
    assert "batch_size" not in message
    # The recorded config is not replaced by the refused one.
    assert yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["model"] == "default"


def test_reopen_with_added_key_names_it(tmp_path):
    _with_results(tmp_path / "run")
    with pytest.raises(CrossknowError, match="dtype"):
        RunDir(tmp_path / "run").open(CONFIG | {"dtype": "bfloat16"}, INPUTS, volatile=("batch_size",))


def test_reopen_with_only_volatile_key_changed_passes(tmp_path):
    """A volatile key (the batch size) may differ on resume: the run reopens with its results, and the recorded
    config and inputs stay the first run's (only a raised growable bound is ever written back)."""
    _with_results(tmp_path / "run")
    again = RunDir(tmp_path / "run")
    again.open(CONFIG | {"batch_size": 1}, INPUTS, volatile=("batch_size",))
    assert again.stage("scores").done_keys() == {"a"}
    assert _pairs(again.stage("scores").read(SCHEMA)) == [("a", 1.0)]
    assert yaml.safe_load((tmp_path / "run" / "config.yaml").read_text()) == CONFIG
    assert json.loads((tmp_path / "run" / "inputs.json").read_text()) == INPUTS


def test_volatile_key_is_checked_when_not_declared_volatile(tmp_path):
    _with_results(tmp_path / "run")
    with pytest.raises(CrossknowError, match="batch_size"):
        RunDir(tmp_path / "run").open(CONFIG | {"batch_size": 1}, INPUTS)


def test_reopen_with_changed_input_hash_raises(tmp_path):
    _with_results(tmp_path / "run")
    with pytest.raises(CrossknowError, match="input"):
        RunDir(tmp_path / "run").open(CONFIG, {"/data/sample.jsonl": "cd" * 32}, volatile=("batch_size",))


def test_config_of_a_run_without_results_is_replaced(tmp_path):
    """A run that failed before committing anything (a mistyped model spec) must not lock its
    --out directory: the corrected command reuses it."""
    RunDir(tmp_path / "run").open(CONFIG | {"model": "nope"}, INPUTS)
    RunDir(tmp_path / "run").open(CONFIG, INPUTS)
    assert yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["model"] == "default"


# ---- atomic writes ------------------------------------------------------------------------------


def test_atomic_write_failure_keeps_old_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "metrics.json"
    atomic_write_json(target, {"accuracy": 0.5})

    def half_then_fail(handle):
        handle.write('{"accuracy": 0.')
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        atomic_write(target, half_then_fail)
    assert json.loads(target.read_text()) == {"accuracy": 0.5}
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]


def test_atomic_write_failure_on_new_file_creates_nothing(tmp_path):
    target = tmp_path / "sub" / "scores.parquet"

    def fail(handle):
        handle.write(b"PAR1")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, fail, binary=True)
    assert not target.exists()
    assert list((tmp_path / "sub").iterdir()) == []


def test_atomic_write_replaces_content(tmp_path):
    target = tmp_path / "config.yaml"
    atomic_write_text(target, "a: 1\n" * 100)
    atomic_write_text(target, "b: 2\n")
    assert target.read_text() == "b: 2\n"
    atomic_write(target, lambda handle: handle.write("日本語".encode()), binary=True)
    assert target.read_text(encoding="utf-8") == "日本語"
    assert [p.name for p in tmp_path.iterdir()] == ["config.yaml"]


# ---- path keys and growable bounds --------------------------------------------------------------


def test_a_path_given_relative_then_absolute_is_the_same_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    config = {"data": "data/x.jsonl", "sets": ["data/x.jsonl", "data/y.jsonl"], "model": "default"}
    run = RunDir(tmp_path / "run")
    run.open(config, {"data/x.jsonl": "ab" * 32}, paths=("data", "sets"))
    run.stage("scores").append(_table(("a", 1.0)), ["a"])
    recorded = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert recorded["data"] == str(tmp_path / "data" / "x.jsonl")
    assert recorded["sets"] == [str(tmp_path / "data" / "x.jsonl"), str(tmp_path / "data" / "y.jsonl")]
    assert json.loads((tmp_path / "run" / "inputs.json").read_text()) == {str(tmp_path / "data" / "x.jsonl"): "ab" * 32}

    absolute = {
        "data": str(tmp_path / "data" / "x.jsonl"),
        "sets": [str(tmp_path / "data" / "x.jsonl"), str(tmp_path / "data" / ".." / "data" / "y.jsonl")],
        "model": "default",
    }
    monkeypatch.chdir(tmp_path / "data")  # resumed from elsewhere, with absolute paths
    RunDir(tmp_path / "run").open(absolute, {str(tmp_path / "data" / "x.jsonl"): "ab" * 32}, paths=("data", "sets"))
    # Another file is another run.
    with pytest.raises(CrossknowError, match="data:"):
        RunDir(tmp_path / "run").open(absolute | {"data": "x2.jsonl"}, {str(tmp_path / "data" / "x.jsonl"): "ab" * 32},
                                      paths=("data", "sets"))


def test_without_paths_a_respelled_path_is_still_another_run(tmp_path, monkeypatch):
    """The comparison is by value unless the caller names the key a path (a spec such as 'sample' is not)."""
    monkeypatch.chdir(tmp_path)
    run = _with_results(tmp_path / "run")
    run.close()
    with pytest.raises(CrossknowError, match="data"):
        RunDir(tmp_path / "run").open(CONFIG | {"data": str(tmp_path / "sample")}, INPUTS, volatile=("batch_size",))


@pytest.mark.parametrize(("first", "then"), [(10, 20), (10, None), (10, 10), (None, None)])
def test_a_limit_can_be_raised_on_resume_and_is_recorded(tmp_path, first, then):
    run = RunDir(tmp_path / "run")
    run.open(CONFIG | {"limit": first}, INPUTS, growable=("limit",))
    run.stage("scores").append(_table(("a", 1.0)), ["a"])
    RunDir(tmp_path / "run").open(CONFIG | {"limit": then}, INPUTS, growable=("limit",))
    assert yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["limit"] == then
    assert RunDir(tmp_path / "run").stage("scores").done_keys() == {"a"}


@pytest.mark.parametrize(("first", "then"), [(20, 10), (None, 10)])
def test_a_limit_lowered_on_resume_is_refused(tmp_path, first, then):
    run = RunDir(tmp_path / "run")
    run.open(CONFIG | {"limit": first}, INPUTS, growable=("limit",))
    run.stage("scores").append(_table(("a", 1.0)), ["a"])
    with pytest.raises(CrossknowError, match=r"\(limit: .* -> 10; limit can be raised on resume, not lowered\)"):
        RunDir(tmp_path / "run").open(CONFIG | {"limit": then}, INPUTS, growable=("limit",))
    assert yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["limit"] == first


def test_a_limit_not_declared_growable_is_checked(tmp_path):
    _with_results(tmp_path / "run")
    with pytest.raises(CrossknowError, match="limit"):
        RunDir(tmp_path / "run").open(CONFIG | {"limit": 5}, INPUTS, volatile=("batch_size",))
