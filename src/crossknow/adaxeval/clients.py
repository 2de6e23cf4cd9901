"""The generators a generation run talks to, built lazily by one `crossknow.generation.clients.ClientPool`, which
records them in the run's models.json.

A spec is any generator spec; `openai:MODEL@URL` names its own server, else --base-url's. Keys come from
environment variables (--api-key-env), never from a spec. --fold-system decides per server whether system
messages are folded into the first user message (see `crossknow.models.openai_generator`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from crossknow.adaxeval.records import GenerateConfig
from crossknow.generation.cached_calls import CostMeter
from crossknow.generation.clients import ClientPool, MakeGenerator, Role
from crossknow.generation.pricing import PriceTable
from crossknow.generation.structured import StructuredClient
from crossknow.store.models_file import ModelEntry, read_models
from crossknow.store.spend_ledger import SpendLedger

FOLD_SYSTEM = {"auto": "auto", "yes": True, "no": False}
"""--fold-system -> the openai: generator's fold_system."""


def generator_role(config: GenerateConfig, spec: str) -> Role:
    """The role of a generator of the run: the writer's access settings (those of the detectors for a detector's
    spec) and the run's sampling settings; a spec that names its own server takes the deprecated
    --server-api-key-env's key where that is given."""
    access = config.detectors if spec in config.detectors.specs and spec != config.writer.spec else config.writer
    role = Role(access=access, temperature=config.temperature, seed=config.seed, max_tokens=config.max_tokens,
                max_attempts=config.max_attempts)
    if config.server_api_key_env and role.parse(spec).base_url != access.base_url:
        return replace(role, access=access.model_copy(update={"api_key_env": config.server_api_key_env}))
    return role


class Clients:
    """One StructuredClient per distinct generator spec, built on first use."""

    def __init__(self, config: GenerateConfig, run_dir: Path, cache_path: Path, make_generator: MakeGenerator):
        self.config = config
        self.run_dir = run_dir
        self.pool = ClientPool(cache_path, PriceTable.load(config.prices) if config.prices else None,
                               run_dir=run_dir, json_mode=config.json_mode,
                               fold_system=FOLD_SYSTEM[config.fold_system], make_generator=make_generator)
        self.pool.record_spend(SpendLedger(run_dir))  # the whole run's spend, over its invocations

    def get(self, spec: str) -> StructuredClient:
        """The client of `spec`, building its generator the first time."""
        return self.pool.client(spec, generator_role(self.config, spec))

    def models(self) -> dict[str, ModelEntry]:
        """Every generator this run directory has used, as models.json records it."""
        return read_models(self.run_dir)

    def meters(self) -> list[CostMeter]:
        """The meters of the clients built so far (what this invocation sent)."""
        return [client.meter for client in self.pool.clients()]

    def close(self) -> None:
        """Close the request cache."""
        self.pool.close()
