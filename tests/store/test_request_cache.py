"""The SQLite request cache: keys, round trips, hit/miss counts, first write wins, many processes."""

from __future__ import annotations

import multiprocessing
import sqlite3

import pytest

from crossknow.errors import CrossknowError
from crossknow.store.request_cache import RequestCache, cache_key, canonical_json

IDENTITY = {"backend": "openai", "model_id": "gpt-4.1", "messages": [["user", "日本の首都は?"]], "seed": 0}


def test_key_is_canonical_and_sensitive():
    reordered = dict(reversed(list(IDENTITY.items())))
    assert cache_key(reordered) == cache_key(IDENTITY)
    assert len(cache_key(IDENTITY)) == 64
    for field, other in [("seed", 1), ("model_id", "gpt-4o"), ("messages", [["user", "日本の首都は？"]])]:
        assert cache_key({**IDENTITY, field: other}) != cache_key(IDENTITY), field
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'


def test_round_trip_counts_and_persistence(tmp_path):
    path = tmp_path / "sub" / "cache.sqlite"
    value = {"text": '{"factuality": "yes"}', "usage": {"prompt_tokens": 3}, "logprobs": [[" yes", -0.1]]}
    with RequestCache(path) as cache:
        key = cache_key(IDENTITY)
        assert cache.get(key) is None
        assert cache.put(IDENTITY, value) == key
        assert cache.get(key) == value
        assert cache.get_many([key, "0" * 64, key]) == [value, None, value]
        assert (cache.hits, cache.misses) == (3, 2)
        assert len(cache) == 1
        assert "hits=3" in repr(cache)
    with RequestCache(path) as reopened:  # another run
        assert reopened.get(key) == value
        assert (reopened.hits, reopened.misses) == (1, 0)
        mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"


def test_first_value_stays(tmp_path):
    with RequestCache(tmp_path / "c.sqlite") as cache:
        key = cache_key(IDENTITY)
        assert cache.put_many([(key, IDENTITY, {"text": "first"})]) == 1
        assert cache.put_many([(key, IDENTITY, {"text": "second"})]) == 0
        assert cache.get(key) == {"text": "first"}
        assert cache.put_many([]) == 0


def test_many_keys_in_one_lookup(tmp_path):
    with RequestCache(tmp_path / "c.sqlite") as cache:
        entries = [(cache_key({"i": i}), {"i": i}, {"n": i}) for i in range(1200)]
        assert cache.put_many(entries) == 1200
        values = cache.get_many([key for key, _, _ in entries])
        assert [v["n"] for v in values] == list(range(1200))


def test_unusable_path_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(CrossknowError, match="cannot open the request cache"):
        RequestCache(blocker / "cache.sqlite")


def _writer(path: str, worker: int, count: int) -> None:
    cache = RequestCache(path)
    for i in range(count):  # one transaction per entry: the most contention
        shared = cache_key({"i": i})  # both workers write these keys
        own = cache_key({"worker": worker, "i": i})
        cache.put_many([(shared, {"i": i}, {"by": worker}), (own, {"worker": worker, "i": i}, {"by": worker})])
    cache.close()


def test_concurrent_processes(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    RequestCache(path).close()
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(path, w, 150)) for w in range(2)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(120)
        assert process.exitcode == 0
    with RequestCache(path) as cache:
        assert len(cache) == 150 + 2 * 150
        shared = cache.get_many([cache_key({"i": i}) for i in range(150)])
        assert all(v["by"] in (0, 1) for v in shared)
        own = cache.get_many([cache_key({"worker": w, "i": i}) for w in range(2) for i in range(150)])
        assert [v["by"] for v in own] == [0] * 150 + [1] * 150
