"""Every role's model, built in one place: every command's clients come from a `ClientPool`, and no other module
constructs a `StructuredClient`.

A `Role` is what one kind of model shares: how it is reached and run (the role's `ModelAccess`: its `openai:` specs'
default server, key variable, device, dtype, concurrency and timeout) and its sampling settings. A pool keeps one
generator per (spec, server, key variable; device and dtype for a local model), one client per generator and
sampling settings, one scorer per spec (a loaded local generator's weights where it shares them) and one request cache
(docs/architecture.md). A pool given a run directory records there, in models.json, what each spec resolved to,
under the spec written with its server (`ModelSpec.written`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from crossknow.generation.cached_calls import CostMeter, sum_meters
from crossknow.generation.pricing import PriceTable
from crossknow.generation.structured import StructuredClient
from crossknow.models.access import ModelAccess
from crossknow.models.generator import Generator, SharesWeights
from crossknow.models.protocol import Scorer
from crossknow.models.registry import (
    ModelOptions,
    ModelSpec,
    load_generator,
    load_scorer,
    parse_spec,
    split_prompt_format,
)
from crossknow.store.cache_dir import cache_dir
from crossknow.store.models_file import record_model, scorer_label
from crossknow.store.request_cache import RequestCache
from crossknow.store.spend_ledger import SpendLedger

MakeGenerator = Callable[[str, ModelOptions], Generator]
"""Builds a generator from (spec without its server, options with the server); `load_generator` unless a test
passes its own."""
MakeScorer = Callable[[str, ModelOptions], Scorer]
"""Builds a scorer from (spec without its server, options with the server); `load_scorer` unless a test passes
its own."""


@dataclass(frozen=True)
class Role:
    """How one role's models are reached and run, and its sampling settings (see the module docstring)."""

    access: ModelAccess = field(default_factory=ModelAccess)
    """The role's server default (a spec's own @URL wins), key variable (whether the spec or the default names the
    server), device, dtype, concurrency and timeout."""
    server_flag: str = "--base-url"
    """The flag that gives `base_url`, as the error of an openai: spec without a server names it."""
    temperature: float = 0.0
    """Sampling temperature of the role's client."""
    seed: int = 0
    """Base seed of the role's client."""
    max_tokens: int = 512
    """Most tokens of one output of the role's client."""
    max_attempts: int = 3
    """Calls per prompt before the role's client records its output as invalid."""

    def parse(self, spec: str, form: Literal["model", "generator"] = "generator") -> ModelSpec:
        """`spec` read with this role's default server: fails before any work on a spec no backend takes or an
        openai: spec without a server (the error names `server_flag`)."""
        return parse_spec(spec, self.access.base_url, form, self.server_flag)


ServerKey = tuple[str, str | None, str | None]
"""(spec without its server, server, key variable); for a local model (spec, None, 'DEVICE DTYPE')."""


def _server_key(parsed: ModelSpec, role: Role) -> ServerKey:
    if parsed.base_url is not None:  # a server's model
        return parsed.bare, parsed.base_url, role.access.api_key_env
    return parsed.bare, None, f"{role.access.device} {role.access.dtype}"


class ClientPool:
    """The models of a run, built on first use and shared where their settings are the same (see the module
    docstring)."""

    def __init__(
        self, cache_path: Path | None = None, prices: PriceTable | None = None, *, run_dir: Path | None = None,
        batch_size: int = 8, json_mode: str = "auto", fold_system: bool | Literal["auto"] = "auto",
        make_generator: MakeGenerator = load_generator, make_scorer: MakeScorer = load_scorer,
    ):
        """`batch_size`, `json_mode` and `fold_system`: the run's engine settings of every role (see
        `ModelOptions`); each role's access settings come with the role."""
        self.settings = ModelOptions(batch_size=batch_size, json_mode=json_mode, fold_system=fold_system)
        self.run_dir = run_dir
        self.cache_path = cache_path
        self.prices = prices or PriceTable()
        self.make_generator = make_generator
        self.make_scorer = make_scorer
        self._adopted: dict[str, Generator] = {}
        self._generators: dict[ServerKey, Generator] = {}
        self._clients: dict[tuple[ServerKey, float, int, int, int], StructuredClient] = {}
        self._scorers: dict[ServerKey, Scorer] = {}
        self._cache: RequestCache | None = None
        self._opens_cache = True
        self._ledger: SpendLedger | None = None

    @classmethod
    def over(cls, cache: RequestCache | None, prices: PriceTable | None = None) -> ClientPool:
        """A pool whose clients share `cache`, a request cache the caller holds and closes (None: no cache, every
        call reaches its model), for models the caller adopts (`adopt`)."""
        pool = cls(prices=prices)
        pool._cache, pool._opens_cache = cache, False
        return pool

    def adopt(self, name: str, generator: Generator) -> None:
        """Hold `generator`, a model the caller already has, as `name`: `generator(name, role)` returns it and
        `client(name, role)` a client over it with the role's sampling settings, whatever the role's server (the
        name is not read as a spec)."""
        self._adopted[name] = generator

    def _key(self, spec: str, role: Role) -> ServerKey:
        """The key of `spec`'s generator: an adopted name as it is, else the spec read with the role's server."""
        return (spec, None, None) if spec in self._adopted else _server_key(role.parse(spec), role)

    def generator(self, spec: str, role: Role) -> Generator:
        """The generator of `spec` on its server (its own @URL, else the role's), built the first time; an adopted
        name's own generator."""
        if spec in self._adopted:
            return self._adopted[spec]
        parsed = role.parse(spec)
        key = _server_key(parsed, role)
        if key not in self._generators:
            self._generators[key] = self.make_generator(parsed.bare, self._options(parsed, role))
        return self._generators[key]

    def client(self, spec: str, role: Role) -> StructuredClient:
        """The client of `spec` with the role's sampling settings, over the pool's request cache: one per
        generator and settings."""
        generator = self.generator(spec, role)
        key = (self._key(spec, role), role.temperature, role.seed, role.max_tokens, role.max_attempts)
        if key not in self._clients:
            self._clients[key] = StructuredClient(
                generator, self.request_cache(), max_attempts=role.max_attempts, prices=self.prices,
                max_tokens=role.max_tokens, temperature=role.temperature, seed=role.seed)
            self._clients[key].record_spend(self._ledger)
            label = spec if spec in self._adopted else role.parse(spec).written
            self._record(label, generator.name, generator.model_id, self._clients[key].prompt_format)
        return self._clients[key]

    def record_spend(self, ledger: SpendLedger | None) -> None:
        """Have every client of the pool, built or to be built, record what it sends in `ledger` (the run's
        spend ledger: `crossknow.store.spend_ledger`), so that the command can report the whole run's spend."""
        self._ledger = ledger
        for client in self._clients.values():
            client.record_spend(ledger)

    def scorer(self, spec: str, role: Role) -> Scorer:
        """The Scorer of `spec` on its server: the loaded weights of a local generator of the same model where
        the pool holds one that shares them (`SharesWeights`), else a scorer of its own."""
        parsed = role.parse(spec, "model")
        key = _server_key(parsed, role)
        if key not in self._scorers:
            loaded = [g for (bare, _, run), g in self._generators.items()
                      if split_prompt_format(bare)[0] == parsed.model and run == key[2]]
            if loaded and parsed.base_url is None and isinstance(loaded[0], SharesWeights):
                self._scorers[key] = loaded[0].scorer()
            else:
                self._scorers[key] = self.make_scorer(parsed.model, self._options(parsed, role))
            self._record(scorer_label(parsed.written), self._scorers[key].name, self._scorers[key].model_id)
        return self._scorers[key]

    def _options(self, parsed: ModelSpec, role: Role) -> ModelOptions:
        """The role's access settings with the spec's server (its own @URL, else the role's) and the run's engine
        settings."""
        run = self.settings
        return role.access.model_copy(update={"base_url": parsed.base_url}).options(
            batch_size=run.batch_size, json_mode=run.json_mode, fold_system=run.fold_system)

    def _record(self, label: str, backend: str, model_id: str, prompt_format: str | None = None) -> None:
        """Write `label`'s entry to the run directory's models.json (a pool without one records nothing)."""
        if self.run_dir is not None:
            record_model(self.run_dir, label, backend, model_id, prompt_format)

    def request_cache(self) -> RequestCache | None:
        """The request cache every client of the pool shares, opened on first use (a pool made by `over`: the
        caller's, or None)."""
        if self._cache is None and self._opens_cache:
            self._cache = RequestCache(self.cache_path or cache_dir() / "requests.sqlite")
        return self._cache

    def clients(self) -> list[StructuredClient]:
        """The distinct clients built so far, in the order they were built."""
        return list(self._clients.values())

    def meter(self) -> CostMeter:
        """What this pool's clients have sent so far, each client counted once."""
        return sum_meters(client.meter for client in self._clients.values())

    def release(self) -> None:
        """Drop every model built so far (their memory is freed once no one else holds them); the request cache
        stays open, adopted models stay held, and a later call builds the model again."""
        self._generators.clear()
        self._clients.clear()
        self._scorers.clear()

    def close(self) -> None:
        """Close the request cache, if the pool opened one (the cache of a pool made by `over` is the caller's)."""
        if self._cache is not None and self._opens_cache:
            self._cache.close()
            self._cache = None
