"""The models an ECLEKTIC run talks to, built only when a stage has work for them, all from one `ClientPool`.

The model under test answers through one StructuredClient; each LLM judge has its own, by role and spec, so that a
judge with the model's own spec (Table 2's Gemini 2.0 Flash) still samples greedily, with the verdict budget, its own
server and key. The 'gold-loss' judge scores through a Scorer of the model under test (its loaded weights where
there are some). The pool records each in the run's models.json.
"""

from __future__ import annotations

from pathlib import Path

from crossknow.eclektic.run_config import EclekticConfig
from crossknow.generation.cached_calls import CostMeter
from crossknow.generation.clients import ClientPool, MakeGenerator, MakeScorer, Role
from crossknow.generation.pricing import PriceTable
from crossknow.generation.structured import StructuredClient
from crossknow.models.protocol import Scorer
from crossknow.models.registry import load_generator, load_scorer


def model_role(config: EclekticConfig) -> Role:
    """The model under test: its server default and key, temperature, seed and answer budget."""
    return Role(access=config.model, temperature=config.temperature,
                seed=config.seed, max_tokens=config.max_tokens, max_attempts=config.max_attempts)


def judge_role(config: EclekticConfig) -> Role:
    """An LLM judge: its server default and key, greedy, the verdict budget."""
    return Role(access=config.judges or config.model, server_flag="--judge-base-url", temperature=0.0, seed=0,
                max_tokens=config.judge_max_tokens, max_attempts=config.max_attempts)


def check_specs(config: EclekticConfig) -> None:
    """Fail before any work on a spec no backend takes, or an openai: spec without its server."""
    model_role(config).parse(config.model.spec)
    for judge in config.judge_specs():
        judge_role(config).parse(judge)


class RunModels:
    """The run's clients and scorer, each built on first use by one `ClientPool` (see the module docstring)."""

    def __init__(self, config: EclekticConfig, run_dir: Path, make_generator: MakeGenerator = load_generator,
                 make_scorer: MakeScorer = load_scorer):
        self.config = config
        self.pool = ClientPool(Path(config.cache) if config.cache else None,
                               PriceTable.load(config.prices) if config.prices else None, run_dir=run_dir,
                               make_generator=make_generator, make_scorer=make_scorer)

    def answerer(self) -> StructuredClient:
        """The client of the model under test (its temperature, seed and answer budget)."""
        return self.pool.client(self.config.model.spec, model_role(self.config))

    def judge(self, spec: str) -> StructuredClient:
        """The client of LLM judge `spec` (greedy, the verdict budget)."""
        return self.pool.client(spec, judge_role(self.config))

    def scorer(self) -> Scorer:
        """A Scorer of the model under test, for the 'gold-loss' judge (the generator's weights where it is a
        local model already loaded)."""
        return self.pool.scorer(self.config.model.spec, model_role(self.config))

    def meter(self) -> CostMeter:
        """What this invocation has sent so far, all clients together."""
        return self.pool.meter()

    def close(self) -> None:
        """Close the request cache."""
        self.pool.close()
