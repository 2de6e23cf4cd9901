"""The models an ECLEKTIC run talks to, built only when a stage has work for them.

The model under test answers through one StructuredClient; each LLM judge has its own, kept by role and
spec: a judge that names the same spec as the model under test (the paper's Table 2 has this case: Gemini
2.0 Flash judges and is judged) still samples greedily, writes at most the verdict budget and calls
--judge-base-url with --judge-api-key-env. A generator is shared between the roles only where spec,
server and key are all the same (a local model is then loaded once). The 'gold-loss' judge scores through a
Scorer of the model under test, which shares the generator's loaded weights when the generator is a local
one already loaded (no second copy). All clients share one request cache, so a resumed or repeated run pays
for nothing twice. models.json in the run directory records each spec's backend and model id as "model"
(a judge with the model's spec as "SPEC (judge)") and, for a generator, the form it was asked in as
"prompt_format": 'chat' (the paper's prompts) or 'completion' (crossknow's few-shot prompts for base models).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from crossknow.eclektic.run_config import EclekticConfig
from crossknow.generation.pricing import PriceTable
from crossknow.generation.structured import CostMeter, StructuredClient, sum_meters
from crossknow.models.checkpoint_cache import cache_dir
from crossknow.models.generator import Generator
from crossknow.models.protocol import Scorer
from crossknow.models.registry import GeneratorOptions, ScorerOptions, check_spec, load_generator, load_scorer
from crossknow.store.atomic import atomic_write_json
from crossknow.store.request_cache import RequestCache

MODELS_FILE = "models.json"
"""Spec -> {"model": 'backend:model id', "prompt_format": 'chat' | 'completion' (generators only)} of every model
a run directory has used."""

MakeGenerator = Callable[[str, GeneratorOptions], Generator]
MakeScorer = Callable[[str, ScorerOptions], Scorer]


def check_specs(config: EclekticConfig) -> None:
    """Fail before any work on a spec no backend takes, or an openai: spec without its server."""
    check_spec(config.model, config.base_url, "generator")
    for judge in config.judges:
        check_spec(judge, config.judge_base_url, "generator", server_hint="needs --judge-base-url URL")


class RunModels:
    """The run's clients and scorer, each built on first use (see the module docstring)."""

    def __init__(self, config: EclekticConfig, run_dir: Path, make_generator: MakeGenerator = load_generator,
                 make_scorer: MakeScorer = load_scorer):
        self.config = config
        self.run_dir = run_dir
        self.make_generator = make_generator
        self.make_scorer = make_scorer
        self._clients: dict[tuple[str, str], StructuredClient] = {}
        """(role, spec) -> client; role 'model' or 'judge'."""
        self._generators: dict[tuple[str, str | None, str], Generator] = {}
        """(spec, base URL, key variable) -> generator, shared by the roles that call the same server."""
        self._scorer: Scorer | None = None
        self._cache: RequestCache | None = None
        self._prices = PriceTable.load(config.prices) if config.prices else PriceTable()

    def answerer(self) -> StructuredClient:
        """The client of the model under test (its temperature, seed and answer budget)."""
        config = self.config
        return self._client("model", config.model, config.base_url, config.api_key_env, config.max_tokens,
                            config.temperature, config.seed)

    def judge(self, spec: str) -> StructuredClient:
        """The client of LLM judge `spec` (greedy, the verdict budget)."""
        config = self.config
        return self._client("judge", spec, config.judge_base_url, config.judge_api_key_env, config.judge_max_tokens,
                            0.0, 0)

    def scorer(self) -> Scorer:
        """A Scorer of the model under test, for the 'gold-loss' judge."""
        if self._scorer is None:
            client = self._clients.get(("model", self.config.model))
            shared = getattr(client.generator, "scorer", None) if client is not None else None
            if callable(shared):  # a local generator already loaded: score with its weights
                self._scorer = shared()
            else:
                options = ScorerOptions(device=self.config.device, dtype=self.config.dtype,
                                        base_url=self.config.base_url, api_key_env=self.config.api_key_env,
                                        concurrency=self.config.concurrency)
                self._scorer = self.make_scorer(self.config.model, options)
            self._record(self.config.model + " (scorer)", self._scorer.name, self._scorer.model_id)
        return self._scorer

    def meter(self) -> CostMeter:
        """What this invocation has sent so far, all clients together."""
        return sum_meters(client.meter for client in self._clients.values())

    def close(self) -> None:
        """Close the request cache."""
        if self._cache is not None:
            self._cache.close()

    def _client(self, role: str, spec: str, base_url: str | None, api_key_env: str, max_tokens: int,
                temperature: float, seed: int) -> StructuredClient:
        if (role, spec) not in self._clients:
            server = (spec, base_url, api_key_env)
            if server not in self._generators:
                options = GeneratorOptions(device=self.config.device, dtype=self.config.dtype, base_url=base_url,
                                           api_key_env=api_key_env, concurrency=self.config.concurrency,
                                           timeout_s=self.config.timeout_s)
                self._generators[server] = self.make_generator(spec, options)
            generator = self._generators[server]
            if self._cache is None:
                self._cache = RequestCache(Path(self.config.cache) if self.config.cache
                                           else cache_dir() / "requests.sqlite")
            self._clients[role, spec] = StructuredClient(
                generator, self._cache, max_attempts=self.config.max_attempts, prices=self._prices,
                max_tokens=max_tokens, temperature=temperature, seed=seed)
            label = f"{spec} (judge)" if role == "judge" and spec == self.config.model else spec
            self._record(label, generator.name, generator.model_id, self._clients[role, spec].prompt_format)
        return self._clients[role, spec]

    def _record(self, spec: str, backend: str, model_id: str, prompt_format: str | None = None) -> None:
        path = self.run_dir / MODELS_FILE
        models = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        models[spec] = {"model": f"{backend}:{model_id}"} | ({"prompt_format": prompt_format} if prompt_format else {})
        atomic_write_json(path, models)
