"""The generators a generation run talks to, built lazily, one StructuredClient per distinct spec.

A spec is any generator spec (`default`, `hf:...`, `gguf:...`, `openai:MODEL`). An `openai:` spec
may name its own server as `openai:MODEL@http://HOST:PORT/v1` (for detectors served by different
servers, e.g. one vLLM per model); without one it uses --base-url. The request cache keys each
request by its server too (`crossknow.generation.structured.request_identity`), so detectors of one
model name on different servers are different voters. Keys come from environment variables, never
from a spec: --api-key-env names the key of --base-url, --server-api-key-env (default VLLM_API_KEY,
the variable `vllm serve` reads) the key of servers named in specs, so that an OpenAI key is never
sent to another host. --fold-system (auto, yes, no) decides per server whether system messages are
folded into the first user message (see `crossknow.models.openai_generator`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from crossknow.adaxeval.records import GenerateConfig
from crossknow.generation.pricing import PriceTable
from crossknow.generation.structured import CostMeter, StructuredClient
from crossknow.models.generator import Generator
from crossknow.models.registry import GeneratorOptions
from crossknow.models.registry import check_spec as check_spec_in_registry
from crossknow.store.atomic import atomic_write_json
from crossknow.store.request_cache import RequestCache

MakeGenerator = Callable[[str, GeneratorOptions], Generator]
"""Builds a generator from (spec, options); `load_generator` unless a test passes its own."""

MODELS_FILE = "models.json"
FOLD_SYSTEM = {"auto": "auto", "yes": True, "no": False}
"""--fold-system -> the openai: generator's fold_system."""


def split_server(spec: str, default_base_url: str | None) -> tuple[str, str | None]:
    """(spec without an @URL suffix, the server URL it names or the default)."""
    if spec.startswith("openai:"):
        for marker in ("@http://", "@https://"):
            head, found, tail = spec.partition(marker)
            if found:
                return head, marker[1:] + tail
    return spec, default_base_url


def check_spec(spec: str, default_base_url: str | None) -> None:
    """Fail now, before any work, on a spec no backend takes or an openai: spec without a server (neither
    its own @URL nor `default_base_url`): the registry's check, with a spec's own server understood."""
    bare, base_url = split_server(spec, default_base_url)
    check_spec_in_registry(bare, base_url, "generator",
                           server_hint="needs a server: pass --base-url URL, or write the spec as openai:MODEL@URL")


class Clients:
    """One StructuredClient per distinct generator spec, built on first use."""

    def __init__(self, config: GenerateConfig, run_dir: Path, cache_path: Path, make_generator: MakeGenerator):
        self.config = config
        self.run_dir = run_dir
        self.cache_path = cache_path
        self.make_generator = make_generator
        self._clients: dict[str, StructuredClient] = {}
        self._cache: RequestCache | None = None
        self._prices = PriceTable.load(config.prices) if config.prices else PriceTable()

    def get(self, spec: str) -> StructuredClient:
        """The client of `spec`, building its generator the first time."""
        if spec not in self._clients:
            check_spec(spec, self.config.base_url)
            bare, base_url = split_server(spec, self.config.base_url)
            own_server = base_url != self.config.base_url
            options = GeneratorOptions(
                base_url=base_url,
                api_key_env=self.config.server_api_key_env if own_server else self.config.api_key_env,
                concurrency=self.config.concurrency,
                timeout_s=self.config.timeout_s, json_mode=self.config.json_mode,
                fold_system=FOLD_SYSTEM[self.config.fold_system],
            )
            generator = self.make_generator(bare, options)
            if self._cache is None:
                self._cache = RequestCache(self.cache_path)
            self._clients[spec] = StructuredClient(
                generator, self._cache, max_attempts=self.config.max_attempts, prices=self._prices,
                max_tokens=self.config.max_tokens, temperature=self.config.temperature, seed=self.config.seed,
            )
            self._record_model(spec, generator)
        return self._clients[spec]

    def _record_model(self, spec: str, generator: Generator) -> None:
        models = self.models()
        models[spec] = f"{generator.name}:{generator.model_id}#{self._clients[spec].prompt_format}"
        atomic_write_json(self.run_dir / MODELS_FILE, models)

    def models(self) -> dict[str, str]:
        """Spec -> 'backend:model id#prompt format' (chat or completion: how its stages asked it) of every generator
        this run directory has used."""
        path = self.run_dir / MODELS_FILE
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}

    def meters(self) -> list[CostMeter]:
        """The meters of the clients built so far (what this invocation sent)."""
        return [client.meter for client in self._clients.values()]

    def close(self) -> None:
        """Close the request cache."""
        if self._cache is not None:
            self._cache.close()
