"""The one builder of every role's client (`crossknow.generation.clients.ClientPool`): keyed by the spec, its
server and key variable, and the role's own sampling settings."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

import pytest

from crossknow.errors import CrossknowError
from crossknow.generation.clients import ClientPool, Role
from crossknow.models.access import ModelAccess


class Made:
    """A generator and scorer factory that records what it was asked to build."""

    def __init__(self):
        self.generators: list[tuple[str, str | None, str]] = []
        self.scorers: list[tuple[str, str | None, str]] = []

    def generator(self, spec, options):
        self.generators.append((spec, options.base_url, options.api_key_env))
        return SimpleNamespace(name="made", model_id=spec, scorer=lambda: SimpleNamespace(name="shared", model_id=spec))

    def scorer(self, spec, options):
        self.scorers.append((spec, options.base_url, options.api_key_env))
        return SimpleNamespace(name="own", model_id=spec)


@pytest.fixture()
def made_pool(tmp_path):
    made = Made()
    pool = ClientPool(cache_path=tmp_path / "requests.sqlite", make_generator=made.generator,
                      make_scorer=made.scorer)
    yield made, pool
    pool.close()


def test_two_roles_with_different_temperatures_get_two_clients_over_one_generator(made_pool):
    made, pool = made_pool
    role = Role(access=ModelAccess(base_url="http://127.0.0.1:9/v1"), temperature=0.7)
    perturbing, translating = pool.client("openai:m", role), pool.client("openai:m", replace(role, temperature=0.0))
    assert perturbing is not translating and perturbing.generator is translating.generator
    assert (perturbing.temperature, translating.temperature) == (0.7, 0.0)
    assert made.generators == [("openai:m", "http://127.0.0.1:9/v1", "OPENAI_API_KEY")]


def test_the_same_settings_share_one_client_whichever_way_the_server_is_written(made_pool):
    made, pool = made_pool
    judge = Role(server_flag="--judge-base-url", max_tokens=16)
    generator = Role(access=ModelAccess(base_url="http://127.0.0.1:9/v1"), max_tokens=16)
    client = pool.client("openai:m@http://127.0.0.1:9/v1", judge)
    assert pool.client("openai:m", generator) is client  # the same server, key and settings: one client
    assert pool.meter() == client.meter and len(pool.clients()) == 1
    assert made.generators == [("openai:m", "http://127.0.0.1:9/v1", "OPENAI_API_KEY")]


def test_each_setting_server_and_key_variable_parts_the_clients(made_pool):
    made, pool = made_pool
    role = Role(access=ModelAccess(base_url="http://127.0.0.1:9/v1"))
    clients = {pool.client("openai:m", variant) for variant in (
        role, replace(role, seed=1), replace(role, max_tokens=7), replace(role, max_attempts=1),
        replace(role, access=ModelAccess(base_url="http://127.0.0.1:9/v1", api_key_env="OTHER_KEY")),
        replace(role, access=ModelAccess(base_url="http://127.0.0.1:8/v1")))}
    assert len(clients) == 6
    assert [(url, key) for _, url, key in made.generators] == [
        ("http://127.0.0.1:9/v1", "OPENAI_API_KEY"), ("http://127.0.0.1:9/v1", "OTHER_KEY"),
        ("http://127.0.0.1:8/v1", "OPENAI_API_KEY")]


def test_a_local_model_is_loaded_once_for_every_role_and_scores_with_the_same_weights(made_pool):
    made, pool = made_pool
    answering = pool.client("default", Role(access=ModelAccess(api_key_env="MODEL_KEY"), temperature=0.9))
    judging = pool.client("default", Role(access=ModelAccess(api_key_env="JUDGE_KEY"), server_flag="--judge-base-url"))
    assert answering is not judging and answering.generator is judging.generator
    assert pool.scorer("default", Role()).name == "shared" and made.scorers == []
    assert pool.scorer("hf:org/m", Role()).name == "own" and made.scorers == [("hf:org/m", None, "OPENAI_API_KEY")]
    assert made.generators == [("default", None, "MODEL_KEY")]


def test_each_role_reaches_its_models_with_its_own_access_settings(tmp_path):
    built = []
    pool = ClientPool(cache_path=tmp_path / "requests.sqlite", batch_size=4,
                      make_generator=lambda spec, options: built.append(options) or SimpleNamespace(
                          name="made", model_id=spec))
    on_gpu = Role(access=ModelAccess(device="cuda:1", dtype="bfloat16", timeout_s=9.0, concurrency=2))
    pool.client("default", on_gpu)
    pool.client("default", Role())  # another device: the model loads again
    pool.client("default", replace(on_gpu, temperature=0.5))  # the same device: the same model
    assert [(o.device, o.dtype, o.timeout_s, o.concurrency, o.batch_size) for o in built] == [
        ("cuda:1", "bfloat16", 9.0, 2, 4), ("auto", "float32", 300.0, 8, 4)]
    pool.close()


def test_a_spec_without_a_server_fails_before_anything_is_built(made_pool):
    made, pool = made_pool
    with pytest.raises(CrossknowError, match="or pass --judge-base-url URL"):
        pool.client("openai:m", Role(server_flag="--judge-base-url"))
    assert made.generators == []


def test_release_drops_the_models_and_keeps_the_cache(made_pool):
    made, pool = made_pool
    first = pool.client("default", Role())
    pool.release()
    assert pool.client("default", Role()) is not first and len(made.generators) == 2


def test_an_adopted_generator_gets_clients_like_a_built_one_and_survives_release(made_pool):
    made, pool = made_pool
    held = SimpleNamespace(name="held", model_id="scripted")
    pool.adopt("scripted", held)  # a name, not a spec: never parsed, whatever the role's server
    cold, warm = pool.client("scripted", Role()), pool.client("scripted", Role(temperature=0.7))
    assert cold.generator is warm.generator is held and cold is not warm
    assert pool.client("scripted", Role(server_flag="--judge-base-url")) is cold  # same settings: one client
    assert cold.calls.cache is pool.request_cache() is not None and made.generators == []
    pool.release()
    assert pool.generator("scripted", Role()) is held


def test_a_pool_over_the_callers_cache_shares_it_and_leaves_it_open(tmp_path):
    from crossknow.store.request_cache import RequestCache

    class Counted(RequestCache):
        closed = 0

        def close(self):
            self.closed += 1
            super().close()

    held = SimpleNamespace(name="held", model_id="scripted")
    with Counted(tmp_path / "requests.sqlite") as cache:
        pool = ClientPool.over(cache)
        pool.adopt("scripted", held)
        assert pool.client("scripted", Role()).calls.cache is cache
        pool.close()
        assert cache.closed == 0  # the caller's to close
    uncached = ClientPool.over(None)
    uncached.adopt("scripted", held)
    assert uncached.client("scripted", Role()).calls.cache is None and uncached.request_cache() is None


def test_a_generator_that_does_not_share_its_weights_leaves_the_scorer_its_own_load(tmp_path):
    made = Made()
    pool = ClientPool(cache_path=tmp_path / "requests.sqlite", make_scorer=made.scorer,
                      make_generator=lambda spec, options: SimpleNamespace(name="llamacpp", model_id=spec))
    pool.client("default", Role())
    assert pool.scorer("default", Role()).name == "own" and made.scorers == [("default", None, "OPENAI_API_KEY")]
    pool.close()


def test_a_pool_with_a_run_directory_records_each_model_once_under_its_spec_with_its_server(tmp_path):
    made = Made()
    pool = ClientPool(cache_path=tmp_path / "requests.sqlite", run_dir=tmp_path, make_generator=made.generator,
                      make_scorer=made.scorer)
    role = Role(access=ModelAccess(base_url="http://127.0.0.1:9/v1"))
    pool.client("openai:m", role)
    pool.client("openai:m", replace(role, temperature=0.5))  # another client of the same model: no second entry
    pool.client("openai:m@http://127.0.0.1:8/v1", role)
    pool.client("default", Role())
    pool.scorer("default", Role())
    pool.scorer("hf:org/m", Role())
    pool.adopt("proxy", SimpleNamespace(name="kept", model_id="p", prompt_format="completion"))
    pool.client("proxy", role)
    pool.close()
    assert json.loads((tmp_path / "models.json").read_text(encoding="utf-8")) == {
        "openai:m@http://127.0.0.1:9/v1": {"model": "made:openai:m", "prompt_format": "chat"},
        "openai:m@http://127.0.0.1:8/v1": {"model": "made:openai:m", "prompt_format": "chat"},
        "default": {"model": "made:default", "prompt_format": "chat"},
        "default (scorer)": {"model": "shared:default"},
        "hf:org/m (scorer)": {"model": "own:hf:org/m"},
        "proxy": {"model": "kept:p", "prompt_format": "completion"},
    }
