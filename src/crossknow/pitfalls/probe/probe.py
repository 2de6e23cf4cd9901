"""`run_probe`: a recipe over source questions, into a run directory, with its accounting.

Sources are cut into fixed batches; a resumed run skips the finished ones (the run's batches table) and replays an
unfinished one through the request cache. `account.json` covers the whole run (the paper's Fig. 4) from the
batches' records and the run's spend ledger, so a killed and resumed run reports what an uninterrupted one
would; depth 0 is reported apart, since every recipe scores the unperturbed pairs.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from crossknow.data.languages import language_name
from crossknow.data.pitfalls import RELEASE_LANGUAGES
from crossknow.data.schemas import Record
from crossknow.errors import CrossknowError
from crossknow.generation.cached_calls import CostMeter, sum_meters
from crossknow.generation.structured import TRANSPORT_FAILURE, StructuredClient
from crossknow.pitfalls.candidates import CANDIDATES_FILE, CandidateList, CandidateRecord
from crossknow.pitfalls.categories import CATEGORIES_FILE, CATEGORY_TABLE
from crossknow.pitfalls.older_runs import import_json_lines, whole_records
from crossknow.pitfalls.pairs import SourceQuestion, root_node
from crossknow.pitfalls.probe.constraints import Similarity
from crossknow.pitfalls.probe.e5 import THETA, THETA_CHOICES, THETA_CROSS, THETA_ROOT
from crossknow.pitfalls.probe.judge_similarity import JudgeSimilarity
from crossknow.pitfalls.probe.objective import SimulationObjective
from crossknow.pitfalls.probe.recipes import Recipe, default_constraints, get_recipe
from crossknow.pitfalls.probe.search import BeamSearch
from crossknow.pitfalls.probe.spend import PROXY_LABELS, SEARCH, SIMULATION, Spend, spend_of, total_spend
from crossknow.pitfalls.proxy import ProxyLLM
from crossknow.pitfalls.simulate import Simulator
from crossknow.store.atomic import atomic_write_json
from crossknow.store.layout import Layout, Table
from crossknow.store.run_dir import RunDir
from crossknow.store.spend_ledger import SpendLedger


class BatchCounts(Record):
    """What the search did in one batch."""

    untranslated: int = Field(default=0, description="Sources whose translation failed (see `rejected`).")
    scored: int = Field(default=0, description="Pairs the simulators scored.")
    unscored: int = Field(default=0, description="Pairs left unscored: invalid simulation after re-simulation.")
    invalid_answers: int = Field(default=0, description="Invalid simulator answers received (each re-simulated).")
    duplicates: int = Field(default=0, description="Children dropped because their text repeated a pair of "
                            "their batch.")
    dropped_by_cap: int = Field(default=0, description="Pairs dropped because their question had k pairs.")
    rejected: dict[str, int] = Field(default_factory=dict, description="Pairs not made or not kept, by reason.")


class BatchRecord(Record):
    """One finished batch (a row of the run's batches table)."""

    batch: int = Field(description="The batch's number (sources cut by position into initial_batch).")
    sources: list[str] = Field(description="Ids of its source questions.")
    found: int = Field(description="Pairs it added to the candidate list.")
    pairs: list[CandidateRecord] = Field(default_factory=list, description="Those pairs, in the order found.")
    counts: BatchCounts = Field(description="What the search did in it.")
    proxy: Spend = Field(description="What the proxy (and the judge, if any) spent on it in the invocation that "
                         "finished it (cache replays cost nothing there; the account counts them from the ledger).")
    simulation: Spend = Field(description="What the simulators spent on it in that invocation (calls = questions "
                              "answered).")
    seconds: float = Field(description="Wall-clock seconds of the batch.")


class ProbeAccount(BatchCounts):
    """What a probe run found and spent, over all its invocations (`account.json`)."""

    recipe: str = Field(description="The recipe run.")
    lang: str = Field(description="Target language code.")
    sources: int = Field(description="Original English questions given.")
    batches: int = Field(description="Batches finished (of ceil(sources / initial_batch)).")
    unfinished: int = Field(default=0, description="Batches this invocation left unfinished because a translation "
                            "request failed in transport: run the command again to finish them.")
    converted: int = Field(description="Sources with at least one pair in the candidate list.")
    conversion_rate: float = Field(description="converted / sources (the paper's conversion rate).")
    converted_at_depth_0: int = Field(description="Sources whose unperturbed pair (depth 0, the translation itself, "
                                      "as NP finds it) is in the list.")
    converted_beyond_depth_0: int = Field(description="Sources with pairs in the list beyond depth 0 only (found by "
                                          "perturbation); the two add up to converted.")
    conversion_rate_at_depth_0: float = Field(description="converted_at_depth_0 / sources.")
    conversion_rate_beyond_depth_0: float = Field(description="converted_beyond_depth_0 / sources.")
    candidates: int = Field(description="Pairs in the candidate list.")
    pairs_at_depth_0: int = Field(description="Pairs in the list at depth 0 (unperturbed).")
    pairs_beyond_depth_0: int = Field(description="Pairs in the list beyond depth 0 (perturbed); the two add up to "
                                      "candidates.")
    found_now: int = Field(description="Pairs added by this invocation.")
    proxy: Spend = Field(description="What the proxy LLM spent (perturbation, translation, and the judge's checks "
                         "if any), whole run: every request the run paid counted once, finished batch or not; "
                         "seconds of the finished batches.")
    simulation: Spend = Field(description="What the simulators spent in the search, whole run: calls = questions "
                              "answered in the finished batches; tokens and cost of generative simulators, every "
                              "request the run paid counted once.")
    prefilter: Spend | None = Field(default=None, description="What the English prefilter spent (as sources.json "
                                    "records it): calls = questions the simulators answered in English, tokens "
                                    "and cost of generative ones; None when none was recorded (`run_probe` called "
                                    "directly with its sources).")
    seconds: float = Field(description="Wall-clock seconds of the finished batches, whole run.")
    per_found_pair: Spend | None = Field(description="prefilter + proxy + simulation spend divided by the pairs "
                                         "in the candidate list (the paper's Fig. 4, cost per found pair): it "
                                         "includes the English prefilter, crossknow's choice, since the questions "
                                         "the prefilter asks are part of what the pairs cost; None if there are "
                                         "none.")
    per_found_pair_search: Spend | None = Field(default=None, description="proxy + simulation spend (the search "
                                                "alone, without the prefilter) divided by the pairs in the "
                                                "candidate list; None if there are none.")
    this_invocation: Spend | None = Field(default=None, description="What this invocation sent to model backends "
                                          "(proxy, judge, generative simulators, the prefilter's requests "
                                          "included; cache hits excluded; calls are requests, not questions) and "
                                          "its wall-clock seconds until the account was written.")


BATCH_TABLE = Table("batches", BatchRecord, key=lambda record: str(record.batch))
"""The finished batches of a probe run, each with its pairs: a batch and what it found are committed at once."""


def _from_json_lines(run: Path) -> None:
    """Layout 1 -> 2: the batches and candidates of a run begun when they were two JSON-lines files, into the
    batches table (the pairs of a batch with no line are left for the next run to find again)."""
    pairs = whole_records(run / CANDIDATES_FILE, CandidateRecord, lambda record: record.id)
    batches = whole_records(run / "batches.jsonl", BatchRecord, BATCH_TABLE.key)
    table = BATCH_TABLE.open(run)
    if batches and not table.keys():
        table.commit([batch.model_copy(update={"pairs": [p for p in pairs if p.source_id in batch.sources]})
                      for batch in batches])
    (run / "batches.jsonl").unlink(missing_ok=True)
    import_json_lines(run, CATEGORY_TABLE, CATEGORIES_FILE)


PROBE_LAYOUT = Layout("pitfalls probe", 2, (BATCH_TABLE, CATEGORY_TABLE), {1: _from_json_lines})
"""A probe's run directory: its finished batches with their pairs, and the categories of `--categorize`."""


def probe_candidates(run: str | Path, cap: int = 3) -> CandidateList:
    """The candidate list of probe run `run`: the pairs of its finished batches."""
    return CandidateList((pair for batch in BATCH_TABLE.open(Path(run)).rows() for pair in batch.pairs), cap)


def run_probe(
    recipe: str | Recipe,
    sources: Sequence[SourceQuestion],
    proxy: ProxyLLM,
    simulators: Sequence[Simulator],
    out: str | Path,
    *,
    lang: str,
    epsilon: float = 0.2,
    similarity: Similarity | None = None,
    theta: float = THETA,
    cross_similarity: Similarity | None = None,
    theta_cross: float = THETA_CROSS,
    choice_similarity: Similarity | None = None,
    theta_choices: float = THETA_CHOICES,
    theta_root: float = THETA_ROOT,
    judge: JudgeSimilarity | None = None,
    samples: int = 1,
    max_resimulations: int = 2,
    progress: Callable[[int, int], None] | None = None,
    prefilter: Spend | None = None,
    ledger: SpendLedger | None = None,
) -> ProbeAccount:
    """Probe `sources` for pairs in target language `lang` with `recipe`; see the module docstring. The
    semantic checks are those given (`recipes.default_constraints`): the library turns none on by itself;
    `crossknow pitfalls probe` (`run.py`) passes the proxy as `judge` by default.
    `progress(batches done, batches)` is called after each batch. `prefilter`: what the English prefilter
    that chose `sources` spent, counted in the account and per found pair. `ledger`: this invocation's spend
    ledger of `out` where the caller opened one already (its prefilter wrote there), else one is opened."""
    recipe = get_recipe(recipe) if isinstance(recipe, str) else recipe
    _check_inputs(sources, lang)
    out = Path(out)
    constraints = default_constraints(epsilon, similarity, theta, cross_similarity, theta_cross, judge,
                                      choice_similarity, theta_choices, theta_root)
    config = {
        "recipe": recipe.name, "settings": vars(recipe.settings), "perturbation": recipe.perturbation, "lang": lang,
        "constraints": [c.name for c in constraints], "simulators": [s.name for s in simulators],
        "semantic_check": semantic_check(similarity, cross_similarity, choice_similarity, judge),
        "judge": judge.model if judge else None,
        "proxy": f"{proxy.perturber.generator.name}:{proxy.perturber.generator.model_id}",
        "prompt_formats": prompt_formats(proxy, simulators, judge),
        "samples": samples, "max_resimulations": max_resimulations, "sources": [s.id for s in sources],
    }
    run = RunDir(out)
    run.open(config, {}, layout=PROBE_LAYOUT)
    ledger = ledger or SpendLedger(out)
    record_spend(ledger, proxy, simulators, judge)
    try:
        candidates = probe_candidates(out, recipe.settings.cap)
        before = len(candidates)
        objective = SimulationObjective(simulators, samples=samples, max_resimulations=max_resimulations)
        search = BeamSearch(recipe.settings, recipe.transformation(proxy, language_name(lang)), objective,
                            constraints, candidates, recipe.name)
        batches = _Batches(
            out, lang, proxy, objective, search, candidates, sim_meters=_simulator_meters(simulators),
            proxy_meters=[proxy.perturber.meter, proxy.translator.meter, *([judge.client.meter] if judge else [])],
        )
        with ledger.during(SEARCH):
            records, unfinished = batches.run(sources, recipe.settings.initial_batch, progress)
        candidates.export(out / CANDIDATES_FILE)
        candidates.write_items(out / "candidate_items.jsonl")
        account = _account(recipe, lang, sources, candidates, before, list(records.values()), unfinished, ledger,
                           prefilter)
        atomic_write_json(out / "account.json", account.model_dump(mode="json"))
        return account
    finally:
        run.close()


def record_spend(ledger: SpendLedger, proxy: ProxyLLM, simulators: Sequence[Simulator],
                 judge: JudgeSimilarity | None = None) -> None:
    """Have the proxy's clients ('proxy'), the judge's ('judge') and the generative simulators' ('simulation')
    record what they send in `ledger`."""
    for client in (proxy.perturber, proxy.translator):
        client.record_spend(ledger, "proxy")
    if judge is not None:
        judge.client.record_spend(ledger, "judge")
    for client in _simulator_clients(simulators):
        client.record_spend(ledger, SIMULATION)


def _check_inputs(sources: Sequence[SourceQuestion], lang: str) -> None:
    """Refuse an unknown target language and repeated source question ids."""
    if lang not in RELEASE_LANGUAGES:
        raise CrossknowError(f"unknown target language {lang!r}; known: {', '.join(sorted(RELEASE_LANGUAGES))}")
    if len({s.id for s in sources}) != len(sources):
        raise CrossknowError("source question ids must be unique")


@dataclass(frozen=True)
class _Batches:
    """One invocation's search, batch by batch, into the run directory `out`."""

    out: Path
    lang: str
    proxy: ProxyLLM
    objective: SimulationObjective
    search: BeamSearch
    candidates: CandidateList
    sim_meters: list[CostMeter]
    proxy_meters: list[CostMeter]
    """The proxy's, and the judge's if any."""

    def run(
        self, sources: Sequence[SourceQuestion], size: int, progress: Callable[[int, int], None] | None
    ) -> tuple[dict[int, BatchRecord], int]:
        """Search every batch of `size` sources that no earlier invocation finished, committing each finished one to
        the batches table; (the records of all finished batches by number, the batches left unfinished)."""
        batches = [sources[i : i + size] for i in range(0, len(sources), size)]
        table = BATCH_TABLE.open(self.out)
        records = {record.batch: record for record in table.rows()}
        unfinished = 0
        for number, batch in enumerate(batches):
            if number not in records:
                record = self.search_batch(number, batch)
                if record is None:
                    unfinished += 1  # not recorded: the next run asks again (what was paid replays from the cache)
                else:
                    records[number] = record
                    table.commit([record])
            if progress is not None:
                progress(number + 1, len(batches))
        return records, unfinished

    def search_batch(self, number: int, batch: Sequence[SourceQuestion]) -> BatchRecord | None:
        """Translate the batch's questions and search from the pairs they make; the batch's record with the pairs it
        found, or None when a translation failed in transport (its pairs are dropped, for the next run to find)."""
        mark = _Mark(self.proxy_meters, self.sim_meters, self.objective, self.search)
        untranslated = 0
        translated = self.proxy.translate_questions([s.question for s in batch], self.lang, language_name(self.lang))
        roots = []
        for source, target in zip(batch, translated, strict=True):
            if isinstance(target, str):
                untranslated += 1
                self.search.stats.rejected[target.split(":", 1)[0]] += 1
            else:
                roots.append(root_node(source, target))
        self.search.run_batch(roots)
        if any(isinstance(t, str) and TRANSPORT_FAILURE in t for t in translated):
            self.candidates.settle(keep=False)
            return None
        record = mark.record(number, [s.id for s in batch], untranslated, self.candidates.new())
        self.candidates.settle(keep=True)
        return record


def prompt_formats(proxy: ProxyLLM, simulators: Sequence[Simulator], judge: JudgeSimilarity | None) -> dict:
    """How each model of a run is asked, as `config.yaml` records it: 'chat' or 'completion' for the proxy, the
    judge (None without one) and each generative simulator by name, 'loss' for a simulator that scores options
    (no prompt), None for one that does not say."""
    return {"proxy": proxy.perturber.prompt_format, "judge": judge.prompt_format if judge else None,
            "simulators": {s.name: getattr(s, "prompt_format", None) for s in simulators}}


def semantic_check(*checks: Similarity | JudgeSimilarity | None) -> str:
    """What checks semantics, as `config.yaml` records it: 'llm' for an LLM judge, else the similarities'
    names ('e5', 'chrf'), joined by '+' when they differ; 'none' when nothing does."""
    names = ["llm" if isinstance(c, JudgeSimilarity) else c.name for c in checks if c is not None]
    return "+".join(dict.fromkeys(names)) or "none"


class _Mark:
    """The meters and counters at the start of a batch, to record what the batch added."""

    def __init__(self, proxy_meters: list[CostMeter], sim_meters: list[CostMeter], objective: SimulationObjective,
                 search: BeamSearch):
        self.started = time.monotonic()
        self.proxy_meters, self.sim_meters, self.objective, self.search = proxy_meters, sim_meters, objective, search
        self.proxy_start = _copy(sum_meters(proxy_meters))
        self.sim_start = _copy(sum_meters(sim_meters))
        meter, stats = objective.meter, search.stats
        self.questions, self.sim_seconds, self.invalid = meter.questions, meter.seconds, meter.invalid_answers
        self.stats = (stats.scored, stats.unscored, stats.duplicates, stats.dropped_by_cap, Counter(stats.rejected))

    def record(self, number: int, source_ids: list[str], untranslated: int,
               pairs: list[CandidateRecord]) -> BatchRecord:
        """The batch's record, from the differences since the mark."""
        meter, stats = self.objective.meter, self.search.stats
        scored, unscored, duplicates, capped, rejected = self.stats
        simulation = _spend(sum_meters(self.sim_meters), self.sim_start).model_copy(
            update={"calls": meter.questions - self.questions, "seconds": meter.seconds - self.sim_seconds})
        counts = BatchCounts(
            untranslated=untranslated, scored=stats.scored - scored, unscored=stats.unscored - unscored,
            invalid_answers=meter.invalid_answers - self.invalid, duplicates=stats.duplicates - duplicates,
            dropped_by_cap=stats.dropped_by_cap - capped, rejected=dict(Counter(stats.rejected) - rejected))
        return BatchRecord(
            batch=number, sources=source_ids, found=len(pairs), pairs=pairs, counts=counts,
            proxy=_spend(sum_meters(self.proxy_meters), self.proxy_start),
            simulation=simulation, seconds=time.monotonic() - self.started)


def _account(
    recipe: Recipe, lang: str, sources: Sequence[SourceQuestion], candidates: CandidateList, before: int,
    records: Sequence[BatchRecord], unfinished: int, ledger: SpendLedger, prefilter: Spend | None,
) -> ProbeAccount:
    """The account of the whole run: the candidate list, the finished batches' records, and the ledger's spend."""
    ids = {s.id for s in sources}
    at_0 = len({r.source_id for r in candidates.records() if r.depth == 0} & ids)
    converted = len({r.source_id for r in candidates.records()} & ids)
    by_depth = Counter(r.depth > 0 for r in candidates.records())
    proxy = spend_of(ledger.total(SEARCH, PROXY_LABELS), sum(r.proxy.seconds for r in records))
    sim = spend_of(ledger.total(SEARCH, [SIMULATION]), sum(r.simulation.seconds for r in records),
                   calls=sum(r.simulation.calls for r in records))
    search = total_spend([proxy, sim])
    spent = total_spend([search, *([prefilter] if prefilter else [])])
    counts = {name: sum(getattr(r.counts, name) for r in records) for name in BatchCounts.model_fields
              if name != "rejected"}
    rejected = sum((Counter(r.counts.rejected) for r in records), Counter())
    found = len(candidates)
    return ProbeAccount(
        recipe=recipe.name, lang=lang, sources=len(sources), batches=len(records), unfinished=unfinished,
        converted=converted, conversion_rate=_rate(converted, sources), converted_at_depth_0=at_0,
        converted_beyond_depth_0=converted - at_0, conversion_rate_at_depth_0=_rate(at_0, sources),
        conversion_rate_beyond_depth_0=_rate(converted - at_0, sources), candidates=found,
        pairs_at_depth_0=by_depth[False], pairs_beyond_depth_0=by_depth[True],
        found_now=found - before, **counts, rejected=dict(rejected), proxy=proxy, simulation=sim,
        prefilter=prefilter, seconds=sum(r.seconds for r in records),
        per_found_pair=_per_pair(spent, found), per_found_pair_search=_per_pair(search, found),
        this_invocation=spend_of(ledger.sent(), time.monotonic() - ledger.started),
    )


def _per_pair(spent: Spend, found: int) -> Spend | None:
    return Spend(**{k: getattr(spent, k) / found for k in Spend.model_fields}) if found else None


def _rate(count: int, sources: Sequence[SourceQuestion]) -> float:
    return count / len(sources) if sources else 0.0


def _simulator_clients(simulators: Sequence[Simulator]) -> list[StructuredClient]:
    """The clients of simulators that answer through a StructuredClient (generative ones)."""
    return [s.client for s in simulators if isinstance(getattr(s, "client", None), StructuredClient)]


def _simulator_meters(simulators: Sequence[Simulator]) -> list[CostMeter]:
    """The cost meters of simulators that answer through a StructuredClient (generative ones)."""
    return [client.meter for client in _simulator_clients(simulators)]


def _copy(meter: CostMeter) -> CostMeter:
    return sum_meters([meter])


def _spend(now: CostMeter, start: CostMeter) -> Spend:
    return Spend(
        calls=now.calls - start.calls, prompt_tokens=now.prompt_tokens - start.prompt_tokens,
        completion_tokens=now.completion_tokens - start.completion_tokens,
        seconds=now.seconds - start.seconds, cost_usd=now.cost_usd - start.cost_usd,
    )
