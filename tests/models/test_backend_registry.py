"""A backend is one class registered with `register_backend`: a toy one, defined here, is read by the one spec reader,
listed in the errors' forms, and carries a whole `evaluate` run with nothing else changed."""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import pytest

from crossknow.errors import CrossknowError, ModelSpecError
from crossknow.evaluation.pipeline import run_evaluate
from crossknow.evaluation.records import EvaluateConfig
from crossknow.models.generator import ChatMessage, GenerateRequest, GenerateResult
from crossknow.models.protocol import ScoreRequest, ScoreResult
from crossknow.models.registry import backends, load_generator, load_scorer, parse_spec, spec_forms
from crossknow.models.specs import ModelOptions, ModelSpec, register_backend, unregister_backend

DEMO_ITEMS = Path(str(resources.files("crossknow") / "samples" / "demo" / "items.jsonl"))


class ShortestFirst:
    """Scores a continuation by minus its length in characters: the shortest option wins."""

    name, dtype = "toy", "toy"

    def __init__(self, model_id: str):
        self.model_id = model_id

    def score(self, requests: Sequence[ScoreRequest], keep_token_logprobs: bool = False) -> list[ScoreResult]:
        return [ScoreResult(logprob_sum=-float(len(r.continuation)), n_tokens=len(r.continuation), greedy=False)
                for r in requests]


class Echo:
    """Answers every request with its last message."""

    name, prompt_format = "toy", "chat"

    def __init__(self, model_id: str):
        self.model_id = model_id

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        return [GenerateResult(text=r.messages[-1].content, backend=self.name, model_id=self.model_id)
                for r in requests]


@pytest.fixture
def toy_backend():
    """The toy backend, registered for one test (the kind 'toy', a local model named after its colon)."""

    @register_backend("toy", usage="toy:NAME", form="a toy model that prefers short options")
    class Toy:
        @staticmethod
        def scorer(parsed: ModelSpec, options: ModelOptions) -> ShortestFirst:
            return ShortestFirst(parsed.model.partition(":")[2])

        @staticmethod
        def generator(parsed: ModelSpec, options: ModelOptions) -> Echo:
            return Echo(parsed.model.partition(":")[2])

    yield Toy
    unregister_backend("toy")


def test_a_registered_backend_is_read_listed_and_loaded(toy_backend):
    assert parse_spec("toy:small#completion", None, "generator") == ModelSpec("toy", "toy:small", None, "completion")
    assert "toy:NAME                 a toy model that prefers short options" in spec_forms()
    assert list(backends())[-1] == "toy"  # after the built-in kinds, whose order stays
    assert load_scorer("toy:small").model_id == "small"
    (echoed,) = load_generator("toy:small").generate([GenerateRequest(messages=(ChatMessage("user", "hello"),))])
    assert echoed.text == "hello"
    with pytest.raises(ModelSpecError, match="toy:NAME"):
        parse_spec("toy:")  # a kind without its name is refused with the forms, the toy's among them
    with pytest.raises(ValueError, match="two backends register the spec kind 'toy'"):
        register_backend("toy", form="again")(toy_backend)


def test_without_its_registration_the_kind_is_unknown():
    with pytest.raises(ModelSpecError, match="unknown model spec 'toy:small'"):
        parse_spec("toy:small")


def test_a_server_backend_takes_the_roles_server(toy_backend):
    @register_backend("toyserver", server=True, usage="toyserver:MODEL[@URL]", form="a toy server")
    class ToyServer(toy_backend):
        pass

    try:
        assert parse_spec("toyserver:m@http://h:1/v1").base_url == "http://h:1/v1"
        assert parse_spec("toyserver:m", "http://role:2/v1").base_url == "http://role:2/v1"
        with pytest.raises(CrossknowError, match="needs a server"):
            parse_spec("toyserver:m")
    finally:
        unregister_backend("toyserver")


def test_evaluate_runs_on_the_toy_backend_as_on_any_other(toy_backend, tmp_path):
    metrics = run_evaluate(EvaluateConfig(model="toy:small", data=str(DEMO_ITEMS), device="cpu"), tmp_path / "run")
    items = [json.loads(line) for line in DEMO_ITEMS.read_text(encoding="utf-8").splitlines()]
    shortest = [min(range(len(item["options"])), key=lambda i: len(item["options"][i])) for item in items]
    expected = sum(item["answer"] == pick for item, pick in zip(items, shortest, strict=True)) / len(items)
    assert metrics.n_items["all"] == len(items) == 160
    assert metrics.accuracy["sum"]["all"] == pytest.approx(expected)
    assert metrics.model.model_id == "small"
