"""A judge is its own client, even when it names the model under test (the paper's Table 2 has this case)."""

from __future__ import annotations

import json

from crossknow.eclektic.run_config import EclekticConfig
from crossknow.eclektic.run_models import RunModels
from crossknow.store.models_file import MODELS_FILE

from .scripted import Scripted


def test_a_self_judge_keeps_its_own_settings_server_and_key(tmp_path):
    config = EclekticConfig(
        data="set.jsonl", model="openai:gemini-2.0-flash", judges=["openai:gemini-2.0-flash"],
        base_url="http://127.0.0.1:8001/v1", api_key_env="MODEL_KEY", temperature=0.7, seed=5, max_tokens=256,
        judge_base_url="http://127.0.0.1:8002/v1", judge_api_key_env="JUDGE_KEY", judge_max_tokens=16,
        cache=str(tmp_path / "requests.sqlite"),
    )
    made = []

    def make_generator(spec, options):
        made.append((spec, options.base_url, options.api_key_env))
        return Scripted(lambda user, seed: "YES", model_id=f"gemini@{options.base_url}")

    models = RunModels(config, tmp_path, make_generator)
    answerer, judge = models.answerer(), models.judge("openai:gemini-2.0-flash")
    assert answerer is not judge and answerer.generator is not judge.generator
    assert made == [("openai:gemini-2.0-flash", "http://127.0.0.1:8001/v1", "MODEL_KEY"),
                    ("openai:gemini-2.0-flash", "http://127.0.0.1:8002/v1", "JUDGE_KEY")]
    assert (answerer.temperature, answerer.seed, answerer.max_tokens) == (0.7, 5, 256)
    assert (judge.temperature, judge.seed, judge.max_tokens) == (0.0, 0, 16)
    assert models.judge("openai:gemini-2.0-flash") is judge and len(made) == 2  # kept, not rebuilt
    recorded = json.loads((tmp_path / MODELS_FILE).read_text(encoding="utf-8"))
    # each model is recorded under its spec written with its server (one name, two servers: two models), with the
    # form it was asked in (a scripted generator without a prompt_format is asked as a chat model)
    assert recorded == {
        "openai:gemini-2.0-flash@http://127.0.0.1:8001/v1": {"model": "scripted:gemini@http://127.0.0.1:8001/v1",
                                                              "prompt_format": "chat"},
        "openai:gemini-2.0-flash@http://127.0.0.1:8002/v1": {"model": "scripted:gemini@http://127.0.0.1:8002/v1",
                                                              "prompt_format": "chat"}}
    models.close()


def test_one_server_for_both_roles_shares_the_generator_not_the_settings(tmp_path):
    config = EclekticConfig(data="set.jsonl", model="default", judges=["default"], temperature=0.9,
                            cache=str(tmp_path / "requests.sqlite"))
    made = []
    models = RunModels(config, tmp_path, lambda spec, options: made.append(spec) or Scripted(lambda u, s: "x"))
    answerer, judge = models.answerer(), models.judge("default")
    assert made == ["default"] and answerer.generator is judge.generator  # a local model is loaded once
    assert (answerer.temperature, judge.temperature) == (0.9, 0.0)
    assert judge.max_tokens == config.judge_max_tokens != answerer.max_tokens
    models.close()
