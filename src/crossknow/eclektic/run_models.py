"""The models an ECLEKTIC run talks to, built only when a stage has work for them, all from one `ClientPool`.

The model under test answers through one StructuredClient; each LLM judge has its own, by role and spec, so that a
judge with the model's own spec (Table 2's Gemini 2.0 Flash) still samples greedily, with the verdict budget, its own
server and key. The 'gold-loss' judge scores through a Scorer of the model under test (its loaded weights where
there are some). models.json records each spec's backend, model id and, for a generator, its `prompt_format`.
"""

from __future__ import annotations

import json
from pathlib import Path

from crossknow.eclektic.run_config import EclekticConfig
from crossknow.generation.clients import ClientPool, MakeGenerator, MakeScorer, ModelSettings, Role
from crossknow.generation.pricing import PriceTable
from crossknow.generation.structured import CostMeter, StructuredClient
from crossknow.models.protocol import Scorer
from crossknow.models.registry import load_generator, load_scorer
from crossknow.store.atomic import atomic_write_json

MODELS_FILE = "models.json"
"""Spec -> {"model": 'backend:model id', "prompt_format": 'chat' | 'completion' (generators only)} of every model
a run directory has used."""


def model_role(config: EclekticConfig) -> Role:
    """The model under test: its server default and key, temperature, seed and answer budget."""
    return Role(base_url=config.base_url, api_key_env=config.api_key_env, temperature=config.temperature,
                seed=config.seed, max_tokens=config.max_tokens, max_attempts=config.max_attempts)


def judge_role(config: EclekticConfig) -> Role:
    """An LLM judge: its server default and key, greedy, the verdict budget."""
    return Role(base_url=config.judge_base_url, api_key_env=config.judge_api_key_env,
                server_flag="--judge-base-url", temperature=0.0, seed=0, max_tokens=config.judge_max_tokens,
                max_attempts=config.max_attempts)


def check_specs(config: EclekticConfig) -> None:
    """Fail before any work on a spec no backend takes, or an openai: spec without its server."""
    model_role(config).parse(config.model)
    for judge in config.judges:
        judge_role(config).parse(judge)


class RunModels:
    """The run's clients and scorer, each built on first use by one `ClientPool` (see the module docstring)."""

    def __init__(self, config: EclekticConfig, run_dir: Path, make_generator: MakeGenerator = load_generator,
                 make_scorer: MakeScorer = load_scorer):
        self.config = config
        self.run_dir = run_dir
        settings = ModelSettings(device=config.device, dtype=config.dtype, concurrency=config.concurrency,
                                 timeout_s=config.timeout_s)
        self.pool = ClientPool(settings, Path(config.cache) if config.cache else None,
                               PriceTable.load(config.prices) if config.prices else None,
                               make_generator=make_generator, make_scorer=make_scorer)
        self._recorded: set[str] = set()

    def answerer(self) -> StructuredClient:
        """The client of the model under test (its temperature, seed and answer budget)."""
        return self._client(self.config.model, model_role(self.config), self.config.model)

    def judge(self, spec: str) -> StructuredClient:
        """The client of LLM judge `spec` (greedy, the verdict budget)."""
        return self._client(spec, judge_role(self.config), f"{spec} (judge)" if spec == self.config.model else spec)

    def scorer(self) -> Scorer:
        """A Scorer of the model under test, for the 'gold-loss' judge (the generator's weights where it is a
        local model already loaded)."""
        scorer = self.pool.scorer(self.config.model, model_role(self.config))
        self._record(self.config.model + " (scorer)", scorer.name, scorer.model_id)
        return scorer

    def meter(self) -> CostMeter:
        """What this invocation has sent so far, all clients together."""
        return self.pool.meter()

    def close(self) -> None:
        """Close the request cache."""
        self.pool.close()

    def _client(self, spec: str, role: Role, label: str) -> StructuredClient:
        client = self.pool.client(spec, role)
        self._record(label, client.generator.name, client.generator.model_id, client.prompt_format)
        return client

    def _record(self, label: str, backend: str, model_id: str, prompt_format: str | None = None) -> None:
        if label in self._recorded:
            return
        self._recorded.add(label)
        path = self.run_dir / MODELS_FILE
        models = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        models[label] = {"model": f"{backend}:{model_id}"} | ({"prompt_format": prompt_format} if prompt_format else {})
        atomic_write_json(path, models)
