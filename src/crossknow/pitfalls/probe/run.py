"""`crossknow pitfalls probe` as a library call: sources drawn and prefiltered, then `run_probe`, from one config.

`probe_from_config(config, out)` draws `n` questions equally over the source files, keeps those every simulator
answers right in English (crossknow's prefilter, `sources.py`, recorded in `sources.json` and reused on resume)
and runs the recipe. Models come from one `ClientPool` unless the caller passes them (the demo); the semantic
check is the proxy's unless `judge` names another model (`build_judge`), or e5's with `similarity='e5'`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from crossknow.errors import CrossknowError
from crossknow.generation.cached_calls import CostMeter, sum_meters
from crossknow.generation.clients import ClientPool, Role
from crossknow.generation.pricing import PriceTable
from crossknow.models.access import GENERATING, ModelAccess, ModelRole, ModelsRole, RoleConfig, RoleKeys
from crossknow.models.registry import parse_spec
from crossknow.pitfalls.categories import categorize_candidates
from crossknow.pitfalls.eval_records import Answering, PitfallsEvalConfig
from crossknow.pitfalls.evaluation import SimulatorFactory
from crossknow.pitfalls.pairs import SourceQuestion
from crossknow.pitfalls.probe.constraints import ChrF, Similarity
from crossknow.pitfalls.probe.e5 import THETA, THETA_CHOICES, THETA_CROSS, THETA_ROOT, E5Similarity
from crossknow.pitfalls.probe.judge_similarity import JUDGE_TEMPERATURE, JudgeSimilarity
from crossknow.pitfalls.probe.probe import ProbeAccount, probe_candidates, record_spend, run_probe
from crossknow.pitfalls.probe.recipes import Recipe, get_recipe
from crossknow.pitfalls.probe.sources import SourceFile, SourceSample, prefilter, read_source_files, read_source_sample
from crossknow.pitfalls.probe.spend import PREFILTER, prefilter_spend
from crossknow.pitfalls.proxy import ProxyLLM
from crossknow.pitfalls.simulate import SIMULATION_MAX_TOKENS, GenerativeSimulator, Simulator
from crossknow.scoring.rules import Rule
from crossknow.store.atomic import atomic_write_json
from crossknow.store.hashing import file_sha256
from crossknow.store.spend_ledger import SpendLedger

SOURCES_FILE = "sources.json"
"""The draw and the prefilter's report (a SourceSample) in the run directory."""


class PitfallsProbeConfig(RoleConfig):
    """Everything that decides a probe run."""

    ROLES = (RoleKeys("proxy", own=("api_key_env",), prefix="proxy_"), RoleKeys("simulators", own=("api_key_env",)),
             RoleKeys("judge", own=("base_url", "api_key_env"), prefix="judge_"))
    SHARED = ("device", "dtype", "concurrency", "timeout_s", *GENERATING)

    recipe: Literal["paper", "np", "dp"] = Field(description="paper: beam search (Appendix B.1); np: translation "
                                                 "only; dp: one direct perturbation.")
    sources: list[str] = Field(min_length=1, description="Source file: a released source/*.json or any crossknow "
                               "item file (its English question items).")
    n: int = Field(ge=1, description="Questions drawn, equally over the source files, before the English prefilter.")
    lang: str = Field(default="ja", description="Target language code (one of the release's 16).")
    proxy: ModelRole = Field(description="Model spec of the proxy LLM that perturbs and translates (openai:MODEL@URL "
                       "names its server).")
    proxy_base_url: str | None = Field(default=None, description="Deprecated: write the proxy's server in its "
                                       "spec, --proxy openai:MODEL@URL (or give --base-url).")
    proxy_max_tokens: int = Field(default=1024, ge=1, description="Most tokens of one proxy output (the paper's "
                                  "1,024).")
    simulators: ModelsRole = Field(description="Model spec of a simulation model (repeat for K models; "
                                  "openai:MODEL@URL names its server).")
    base_urls: list[str] = Field(default_factory=list, description="Server of the openai: proxy and simulators whose "
                                 "spec names none. Deprecated: once per simulator, in order (write each server in "
                                 "its spec).")
    answering: Answering = Field(default="loss", description="'loss': the option with the lowest loss (crossknow's "
                                 "addition); 'generative': the paper's zero-shot CoT templates.")
    rule: Rule = Field(default="lm-eval", description="Scoring rule of loss-based answering.")
    prefilter: bool = Field(default=True, description="Keep only the questions every simulator answers right in "
                            "English (crossknow's choice: the paper describes no filter of its sources; the "
                            "authors' released run.py filters the same way).")
    judge: ModelRole | None = Field(default=None, description="Model spec of the LLM judge of --similarity llm (unset: "
                              "the proxy judges).")
    categorize: bool = Field(default=True, description="Classify each found pair into Table 4's six subject "
                             "domains with the proxy (categories.jsonl; the prompt is crossknow's).")
    limit: int | None = Field(default=None, ge=1, description="Probe only the first N questions the prefilter kept "
                              "(unset: all).")
    seed: int = Field(default=0, description="Seed of the draw over the source files, and base seed of generative "
                      "answering.")
    epsilon: float = Field(default=0.2, ge=0, le=1, description="ε: a pair needs mean English accuracy >= 1 - ε.")
    similarity: Literal["llm", "e5", "chrf", "none"] = Field(
        default="llm", description="The semantic checks: 'llm' (the paper's kind, section 4: an LLM judge, the "
        "proxy unless --judge names another model, checks θ and θ'), 'e5' (judge-free: multilingual-e5-small "
        "cosines for θ, θ' and the choices, thresholds measured on the release), 'chrf' (character n-grams: θ "
        "only, within English), 'none' (all checks off).")
    theta: float = Field(default=THETA, ge=0, le=1, description="θ of --similarity e5 or chrf: S(original "
                         "English, perturbed English) >= θ (crossknow's threshold for e5, from the release).")
    theta_cross: float = Field(default=THETA_CROSS, ge=0, le=1, description="θ' of --similarity e5: S(perturbed "
                               "English, perturbed target) >= θ' (crossknow's threshold, from the release).")
    theta_root: float = Field(default=THETA_ROOT, ge=0, le=1, description="θ' of --similarity e5 for an "
                              "unperturbed pair: S(English question, its translation) >= this (from the release).")
    theta_choices: float = Field(default=THETA_CHOICES, ge=0, le=1, description="--similarity e5: S(English "
                                 "choices, target choices), each side joined into one text, >= this (from the "
                                 "release).")
    max_resimulations: int = Field(default=2, ge=0, description="Times a question with an invalid answer is asked "
                                   "again (generative answering: with new seeds) before its pair is left unscored.")
    initial_batch: int | None = Field(default=None, ge=1, description="Override: original pairs searched together.")
    width: int | None = Field(default=None, ge=1, description="Override: beam width w.")
    depth: int | None = Field(default=None, ge=0, description="Override: initial depth d1.")
    extended_depth: int | None = Field(default=None, ge=0, description="Override: extended depth d2.")
    max_attempts: int = Field(default=3, ge=1, description="Calls per request before its output counts as invalid.")
    batch_size: int = Field(default=16, ge=1, description="Questions per scorer batch (loss answering).")
    cache: str | None = Field(default=None, description="SQLite request cache (unset: the user's cache directory).")
    prices: str | None = Field(default=None, description="YAML/JSON file of model prices (USD per 1M tokens).")

    @model_validator(mode="after")
    def _judge_needs_llm(self) -> PitfallsProbeConfig:
        if self.judge is not None and self.similarity != "llm":
            raise ValueError(f"--judge names the model of --similarity llm, not of {self.similarity!r}")
        if len(self.base_urls) not in (0, 1, len(self.simulators.specs)):
            raise ValueError(f"--base-url: give it once (the server of the specs that name none), not "
                             f"{len(self.base_urls)} times")
        return self

    @property
    def base_url(self) -> str | None:
        """--base-url given once: the server of the openai: proxy and simulators whose spec names none."""
        return self.base_urls[0] if len(self.base_urls) == 1 else None

    def simulator_servers(self) -> list[str | None]:
        """Each simulator's default server: --base-url, or the deprecated --base-url given once per simulator."""
        return list(self.base_urls) if len(self.base_urls) > 1 else [self.base_url] * len(self.simulators.specs)

    def proxy_role(self) -> Role:
        """The proxy's server default (--base-url, or the deprecated --proxy-base-url where given), key, output
        cap and attempts; `ProxyLLM.from_pool` sets its temperatures."""
        server = self.proxy_base_url or self.base_url
        return Role(access=self.proxy.model_copy(update={"base_url": server}), max_tokens=self.proxy_max_tokens,
                    max_attempts=self.max_attempts)

    def judge_role(self) -> Role:
        """The LLM judge named by --judge: --judge-base-url, --judge-api-key-env, the proxy's output cap."""
        return Role(access=self.judge or ModelAccess(), server_flag="--judge-base-url",
                    temperature=JUDGE_TEMPERATURE, max_tokens=self.proxy_max_tokens, max_attempts=self.max_attempts)

    def deprecations(self) -> list[str]:
        """What this config sets through options that are no longer the way, each with the new way."""
        notes, soon = [], "is deprecated and will be removed in the next release"
        if self.proxy_base_url:
            written = parse_spec(self.proxy.spec, self.proxy_base_url, "generator").written
            notes.append(f"--proxy-base-url {soon}: write the proxy's server in its spec, --proxy {written}")
        if len(self.base_urls) > 1:
            written = " ".join(f"--simulator {parse_spec(spec, url, 'generator').written}"
                               for spec, url in zip(self.simulators.specs, self.base_urls, strict=True))
            notes.append(f"--base-url once per --simulator {soon}: write each simulator's server in its spec, "
                         f"{written}")
        return notes

    def similarities(self) -> tuple[Similarity | None, Similarity | None, Similarity | None]:
        """(S for θ, S for θ', S for the choices) of the judge-free checks: e5 for all three under 'e5'; chrF
        for θ only under 'chrf' (chrF compares within one language); none under 'llm' (the judge, see
        `build_judge`) and 'none'."""
        if self.similarity == "e5":
            shared = E5Similarity()
            return shared, shared, shared
        return (ChrF(), None, None) if self.similarity == "chrf" else (None, None, None)

    def recipe_with_overrides(self) -> Recipe:
        """The named recipe with the overridden beam settings (a reduced search, e.g. the demo's)."""
        recipe = get_recipe(self.recipe)
        names = ("initial_batch", "width", "depth", "extended_depth")
        changes = {name: getattr(self, name) for name in names if getattr(self, name) is not None}
        return dataclasses.replace(recipe, settings=dataclasses.replace(recipe.settings, **changes))


Progress = Callable[[str, int, int, CostMeter], None]
"""progress(stage, done, total, spend so far): stage 'prefilter' (0 or 1 of 1), the recipe's name (batches) or
'categorize' (found pairs);
the spend sums the proxy's and the generative simulators' meters (loss answering is local and free)."""


def probe_pool(config: PitfallsProbeConfig, run_dir: Path | None = None) -> ClientPool:
    """The pool the probe's proxy, simulators and judge come from, over one request cache; it records them in
    `run_dir`."""
    return ClientPool(Path(config.cache) if config.cache else None,
                      PriceTable.load(config.prices) if config.prices else None, run_dir=run_dir,
                      batch_size=config.batch_size)


def check_models(config: PitfallsProbeConfig, proxy: bool = True, simulators: bool = True) -> None:
    """Fail before any work or model load on a spec of the proxy (when `proxy`), the simulators (when
    `simulators`) or the judge that no backend takes, or an openai: spec without a server."""
    if proxy:
        config.proxy_role().parse(config.proxy.spec)
    if simulators:
        form = "generator" if config.answering == "generative" else "model"
        for spec, url in zip(config.simulators.specs, config.simulator_servers(), strict=True):
            Role(access=ModelAccess(base_url=url)).parse(spec, form)
    if config.judge is not None:
        config.judge_role().parse(config.judge.spec)


def build_proxy(config: PitfallsProbeConfig, pool: ClientPool) -> ProxyLLM:
    """The proxy LLM of `config.proxy`, from `pool`."""
    return ProxyLLM.from_pool(pool, config.proxy.spec, config.proxy_role())


def build_judge(config: PitfallsProbeConfig, proxy: ProxyLLM, pool: ClientPool) -> JudgeSimilarity | None:
    """The LLM judge of `--similarity llm` (None under any other): the model of `config.judge` from `pool`, or
    else the proxy's own model from the proxy's pool, with the proxy's cache, price table, attempts and output cap."""
    if config.similarity != "llm":
        return None
    if config.judge is None:
        return JudgeSimilarity(proxy.client_at(JUDGE_TEMPERATURE))
    return JudgeSimilarity(pool.client(config.judge.spec, config.judge_role()))


def build_simulators(config: PitfallsProbeConfig, pool: ClientPool) -> list[Simulator]:
    """The K simulators, from `pool` (through `crossknow pitfalls eval`'s factory), each named by its spec."""
    def on(server: str | None) -> PitfallsEvalConfig:
        """The simulators as `crossknow pitfalls eval` would reach them, their default server `server`."""
        return PitfallsEvalConfig(
            pairs="", models=config.simulators.model_copy(update={"base_url": server}), answering=config.answering,
            rule=config.rule, max_tokens=SIMULATION_MAX_TOKENS, max_attempts=config.max_attempts, seed=config.seed,
            batch_size=config.batch_size, cache=config.cache, prices=config.prices)

    factory = SimulatorFactory(on(config.base_url), pool)
    servers = config.simulator_servers()
    return [factory(spec, on(url)) for spec, url in zip(config.simulators.specs, servers, strict=True)]


def draw_sources(
    config: PitfallsProbeConfig, files: Sequence[SourceFile], out: Path, simulators: Sequence[Simulator],
    answering: str, ledger: SpendLedger,
) -> tuple[list[SourceQuestion], SourceSample]:
    """The probe's sources from `files`: reused from `sources.json` when its draw matches, else drawn and
    prefiltered, with the prefilter's requests recorded in `ledger` and its whole-run spend in sources.json."""
    names = [s.name for s in simulators] if config.prefilter else []
    path = out / SOURCES_FILE
    if path.exists():
        previous = read_source_sample(path)
        same = (previous.seed, previous.n, previous.simulators, previous.answering) == (config.seed, config.n, names,
                                                                                        answering)
        if same and [(f.path, f.sha256) for f in previous.files] == [(str(f.path), file_sha256(f.path)) for f in files]:
            by_id = {q.id: q for f in files for q in f.questions}
            return [by_id[i] for i in previous.kept_ids], previous
    started = time.monotonic()
    asking = simulators if config.prefilter else []
    with ledger.during(PREFILTER):
        kept, report = prefilter(files, config.n, config.seed, asking, answering)
    spend = prefilter_spend(ledger, report.drawn * len(asking), time.monotonic() - started)
    report = report.model_copy(update={"spend": spend})
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, report.model_dump(mode="json"))
    return kept, report


def probe_from_config(
    config: PitfallsProbeConfig, out: str | Path, progress: Progress | None = None, *,
    proxy: ProxyLLM | None = None, simulators: Sequence[Simulator] | None = None, answering: str | None = None,
) -> tuple[ProbeAccount, SourceSample]:
    """Draw, prefilter and probe (see the module docstring). `proxy` and `simulators`, when given, replace
    the ones `config` names, and `answering` then describes how the simulators answer (it is recorded)."""
    out = Path(out)
    files = read_source_files(config.sources)  # a bad file fails before any model loads
    check_models(config, proxy=proxy is None, simulators=simulators is None)
    pool = probe_pool(config, out)
    try:
        if simulators is None:
            simulators = build_simulators(config, pool)
            answering = f"{config.answering} ({config.rule})" if config.answering == "loss" else config.answering
        if proxy is None:
            proxy = build_proxy(config, pool)
        judge = build_judge(config, proxy, pool)
        ledger = SpendLedger(out)
        record_spend(ledger, proxy, simulators, judge)
        meters = [proxy.perturber.meter, proxy.translator.meter, *([judge.client.meter] if judge else []),
                  *(s.client.meter for s in simulators if isinstance(s, GenerativeSimulator))]

        def report(stage: str, done: int, total: int) -> None:
            if progress:
                progress(stage, done, total, sum_meters(meters))

        report("prefilter", 0, 1)
        sources, sample = draw_sources(config, files, out, simulators, answering or "given", ledger)
        report("prefilter", 1, 1)
        if not sources:
            raise CrossknowError(f"the prefilter kept none of the {sample.drawn} questions drawn "
                                 f"({sample.dropped_wrong} wrong, {sample.dropped_invalid} invalid in English); "
                                 f"see {out / SOURCES_FILE}")
        similarity, cross_similarity, choice_similarity = config.similarities()
        account = run_probe(
            config.recipe_with_overrides(), sources[: config.limit], proxy, simulators, out, lang=config.lang,
            epsilon=config.epsilon, similarity=similarity, theta=config.theta, cross_similarity=cross_similarity,
            theta_cross=config.theta_cross, choice_similarity=choice_similarity, theta_choices=config.theta_choices,
            theta_root=config.theta_root,
            judge=judge, max_resimulations=config.max_resimulations,
            progress=lambda done, total: report(config.recipe, done, total), prefilter=sample.spend, ledger=ledger,
        )
        if config.categorize:
            candidates = probe_candidates(out)
            with ledger.during("categorize"):
                rows = categorize_candidates(out, candidates.records(), proxy.translator,
                                             on_progress=lambda done, total: report("categorize", done, total))
            candidates.write_items(
                out / "candidate_items.jsonl", {pair_id: row.category for pair_id, row in rows.items()})
        return account, sample
    finally:
        pool.close()
