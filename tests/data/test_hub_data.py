"""`hf:ORG/NAME[@REVISION][:SPLIT]` data against a local Hugging Face cache in the Hub's layout (tests/hub_cache.py),
offline: a one-file JSON split read as published, Parquet shards converted once to JSON lines, and the commands'
readers and run directories taking either."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crossknow.data.hub_data import HubData, data_file
from crossknow.dynamics.trace import load_sets
from crossknow.errors import CrossknowError
from crossknow.pitfalls.categorize.run import read_all_pairs
from crossknow.store.hashing import file_sha256
from crossknow.store.run_dir import absolute_path
from tests.hub_cache import write_hub_cache

from ..conftest import SHARED_DATA

PITFALLS = SHARED_DATA / "cross-lingual-pitfalls"
EXAMPLES = SHARED_DATA / "adaxeval-paper-examples.jsonl"
CARD = """---
configs:
- config_name: default
  data_files:
  - split: japanese
    path: Japanese.json
  - split: french
    path: French.json
---
"""
"""A dataset card that names one split per pair file, as a mirror of the Pitfalls release on the Hub would."""


def _examples() -> list[dict]:
    return [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two dataset repositories in an offline Hub cache: org/pitfalls (two release files, a card naming their
    splits) and org/examples (the AdaXEval paper examples as two Parquet shards of `test` and one of `train`, the
    train rows without `paraphrase`)."""
    from huggingface_hub import constants

    pitfalls = tmp_path / "sources" / "pitfalls"
    pitfalls.mkdir(parents=True)
    for name in ("Japanese.json", "French.json"):
        shutil.copy(PITFALLS / name, pitfalls / name)
    (pitfalls / "README.md").write_text(CARD, encoding="utf-8")
    examples = tmp_path / "sources" / "examples"
    (examples / "data").mkdir(parents=True)
    rows = _examples()
    schema = pa.Table.from_pylist(rows).schema
    pq.write_table(pa.Table.from_pylist(rows[:12], schema), examples / "data" / "test-00000-of-00002.parquet")
    pq.write_table(pa.Table.from_pylist(rows[12:], schema), examples / "data" / "test-00001-of-00002.parquet")
    no_paraphrase = [{k: v for k, v in row.items() if k != "paraphrase"} for row in rows[:2]]  # null in Parquet
    train = pa.Table.from_pylist(no_paraphrase + rows[2:3], schema)
    pq.write_table(train, examples / "data" / "train-00000-of-00001.parquet")
    cache = tmp_path / "hub"
    write_hub_cache(cache, "org/pitfalls", {"main": pitfalls}, kind="dataset")
    write_hub_cache(cache, "org/examples", {"main": examples}, kind="dataset")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("CROSSKNOW_CACHE", str(tmp_path / "crossknow"))
    return cache


def test_the_address_names_repository_revision_and_split() -> None:
    assert HubData.parse("hf:org/name") == HubData("org/name", None, None)
    assert HubData.parse("hf:org/name:test") == HubData("org/name", None, "test")
    assert HubData.parse("hf:org/name@v1.0:test") == HubData("org/name", "v1.0", "test")
    for bad in ("hf:name", "hf:org/name/extra", "hf:org/name:", "hf:org/name@:test", "hf:/name"):
        with pytest.raises(CrossknowError, match=r"hf:ORG/NAME\[@REVISION\]\[:SPLIT\]"):
            HubData.parse(bad)


def test_a_local_path_is_returned_as_it_is() -> None:
    assert data_file("runs/items.jsonl") == Path("runs/items.jsonl")
    assert data_file(Path("/x/y.json")) == Path("/x/y.json")


def test_a_one_file_json_split_is_the_published_file(hub: Path) -> None:
    path = data_file("hf:org/pitfalls:japanese")
    assert path.name == "Japanese.json"  # the name gives a pair file its language
    assert file_sha256(path) == file_sha256(PITFALLS / "Japanese.json")
    assert data_file("hf:org/pitfalls:french").read_bytes() == (PITFALLS / "French.json").read_bytes()


def test_parquet_shards_are_converted_once_to_json_lines_in_order(hub: Path, monkeypatch) -> None:
    path = data_file("hf:org/examples:test")
    assert path.suffix == ".jsonl" and path.is_relative_to(hub.parent / "crossknow")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert rows == _examples()  # both shards, in order, every field as the original file has it
    train = [json.loads(line) for line in data_file("hf:org/examples:train").read_text(encoding="utf-8").splitlines()]
    assert ["paraphrase" in row for row in train] == [False, False, True]  # null in Parquet: left out

    import datasets

    def refuse(*args, **kwargs):
        raise AssertionError("converted again")

    monkeypatch.setattr(datasets, "load_dataset", refuse)
    assert data_file("hf:org/examples:test") == path


def test_a_missing_split_revision_or_repository_is_refused_by_name(hub: Path) -> None:
    with pytest.raises(CrossknowError, match=r"has the splits test, train; name one as hf:org/examples:SPLIT"):
        data_file("hf:org/examples")
    with pytest.raises(CrossknowError, match=r"no split 'german' \(the dataset has french, japanese\)"):
        data_file("hf:org/pitfalls:german")
    with pytest.raises(CrossknowError, match=r"hf:org/absent:test: cannot fetch the dataset \(HF_HUB_OFFLINE is set"):
        data_file("hf:org/absent:test")
    with pytest.raises(CrossknowError, match=r"hf:org/examples@v2:test: cannot fetch"):
        data_file("hf:org/examples@v2:test")


def test_a_run_directory_records_the_address_not_a_path() -> None:
    assert absolute_path("hf:org/examples:test") == "hf:org/examples:test"
    assert absolute_path(["hf:org/a", "rel.jsonl"])[0] == "hf:org/a"


def test_trace_and_categorize_read_their_sets_from_the_hub(hub: Path) -> None:
    (examples,) = load_sets(["hf:org/examples:test"], "en")
    (local,) = load_sets([str(EXAMPLES)], "en")
    assert examples.name == "test" and len(examples.items) == 40  # a cloze and a question item per example
    assert [item.model_dump() for item in examples.items] == [item.model_dump() for item in local.items]
    pairs, invalid, duplicates = read_all_pairs([data_file("hf:org/pitfalls:japanese")], limit=5)  # as categorize
    assert [pair.question for pair in pairs] == [
        pair["question"] for pair in json.loads((PITFALLS / "Japanese.json").read_text(encoding="utf-8"))[:5]]


@pytest.mark.model
def test_evaluate_on_a_hub_split_scores_what_the_local_file_scores(hub: Path, tmp_path: Path, embedded_scorer) -> None:
    """The same four items from the converted shards and from the release file: the same scores; config.yaml keeps
    the address, inputs.json the converted file's SHA-256."""
    from crossknow.evaluation.pipeline import run_evaluate
    from crossknow.evaluation.records import EvaluateConfig

    def score(data: str, out: Path):  # weights_of: the weights' identity is not what this test checks (and costs 20 s)
        config = EvaluateConfig(model="default", data=data, device="cpu", limit=4)
        run_evaluate(config, out, make_scorer=lambda spec, options: embedded_scorer, weights_of=lambda spec: "w")
        return pq.read_table(out / "scores.parquet").drop_columns(["set"]).to_pylist()

    assert score("hf:org/examples:test", tmp_path / "hub-run") == score(str(EXAMPLES), tmp_path / "local-run")
    import yaml

    recorded = yaml.safe_load((tmp_path / "hub-run" / "config.yaml").read_text(encoding="utf-8"))
    assert recorded["data"] == "hf:org/examples:test"
    converted = data_file("hf:org/examples:test")
    assert json.loads((tmp_path / "hub-run" / "inputs.json").read_text()) == {str(converted): file_sha256(converted)}
