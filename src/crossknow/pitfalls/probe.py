"""`run_probe`: a recipe over source questions, into a run directory, with its accounting.

The run directory holds `config.yaml` (the recipe's settings, the constraints, the simulators and the
proxy), `candidates.jsonl` (the candidate list, see `candidates.py`), `candidate_items.jsonl` (the
same pairs as items `crossknow evaluate` reads), `batches.jsonl` (one line per finished batch) and
`account.json` (conversion, calls, tokens, seconds and cost, in total and per found pair: the paper's
Fig. 4). Sources are cut into fixed batches by position; a resumed run skips the finished batches and
replays an unfinished one through the request cache (paid calls are not paid again), the candidate
list keeping each pair once and the cap of k per question. `account.json` counts what this
invocation spent (a replay from the cache costs nothing).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import Field

from crossknow.data.jsonl import iter_json_lines
from crossknow.data.pitfalls import LANGUAGE_CODES
from crossknow.data.schemas import Record
from crossknow.errors import CrossknowError
from crossknow.generation.structured import CostMeter, StructuredClient, sum_meters
from crossknow.pitfalls.candidates import CandidateList, append_json_line, cut_torn_last_line
from crossknow.pitfalls.constraints import Similarity
from crossknow.pitfalls.e5 import THETA, THETA_CROSS
from crossknow.pitfalls.objective import SimulationObjective
from crossknow.pitfalls.pairs import SourceQuestion, root_node
from crossknow.pitfalls.recipes import Recipe, default_constraints, get_recipe
from crossknow.pitfalls.search import BeamSearch
from crossknow.pitfalls.simulate import Simulator
from crossknow.pitfalls.transformation import ProxyLLM
from crossknow.store.atomic import atomic_write_json
from crossknow.store.run_dir import RunDir

LANGUAGE_NAMES = {code: name for name, code in LANGUAGE_CODES.items()}
"""Target language name by code (the release's 16 languages)."""


class Spend(Record):
    """Model calls, tokens, seconds and cost."""

    calls: float = Field(description="Requests sent to a backend (cache hits excluded); questions for simulators.")
    prompt_tokens: float = Field(description="Prompt tokens of those requests (0 where the backend reports none).")
    completion_tokens: float = Field(description="Completion tokens of those requests.")
    seconds: float = Field(description="Wall-clock seconds spent.")
    cost_usd: float = Field(description="Cost at the price table (local models cost 0).")


class ProbeAccount(Record):
    """What one `run_probe` invocation found and spent (`account.json`)."""

    recipe: str = Field(description="The recipe run.")
    lang: str = Field(description="Target language code.")
    sources: int = Field(description="Original English questions given.")
    untranslated: int = Field(description="Sources whose translation failed in this invocation (see `rejected`).")
    converted: int = Field(description="Sources with at least one pair in the candidate list.")
    conversion_rate: float = Field(description="converted / sources (the paper's conversion rate).")
    candidates: int = Field(description="Pairs in the candidate list.")
    found_now: int = Field(description="Pairs added by this invocation.")
    scored: int = Field(description="Pairs the simulators scored in this invocation.")
    unscored: int = Field(description="Pairs left unscored: invalid simulation after re-simulation.")
    invalid_answers: int = Field(description="Invalid simulator answers received (each re-simulated).")
    duplicates: int = Field(description="Children dropped because their text repeated a pair of their batch.")
    dropped_by_cap: int = Field(description="Pairs dropped because their question had k pairs.")
    rejected: dict[str, int] = Field(description="Pairs not made or not kept, by reason.")
    proxy: Spend = Field(description="What the proxy LLM spent (perturbation and translation).")
    simulation: Spend = Field(description="What the simulators spent (calls = questions answered).")
    seconds: float = Field(description="Wall-clock seconds of the whole invocation.")
    per_found_pair: Spend | None = Field(description="proxy + simulation spend divided by found_now; None if 0.")


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
    samples: int = 1,
    max_resimulations: int = 2,
    progress: Callable[[int, int], None] | None = None,
) -> ProbeAccount:
    """Probe `sources` for pairs in target language `lang` with `recipe`; see the module docstring.
    `progress(batches done, batches)` is called after each batch."""
    started = time.monotonic()
    recipe = get_recipe(recipe) if isinstance(recipe, str) else recipe
    if lang not in LANGUAGE_NAMES:
        raise CrossknowError(f"unknown target language {lang!r}; known: {', '.join(sorted(LANGUAGE_NAMES))}")
    if len({s.id for s in sources}) != len(sources):
        raise CrossknowError("source question ids must be unique")
    out = Path(out)
    constraints = default_constraints(epsilon, similarity, theta, cross_similarity, theta_cross)
    config = {
        "recipe": recipe.name, "settings": vars(recipe.settings), "perturbation": recipe.perturbation, "lang": lang,
        "constraints": [c.name for c in constraints], "simulators": [s.name for s in simulators],
        "proxy": f"{proxy.perturber.generator.name}:{proxy.perturber.generator.model_id}",
        "samples": samples, "max_resimulations": max_resimulations, "sources": [s.id for s in sources],
    }
    run = RunDir(out)
    run.open(config, {}, has_results=(out / "batches.jsonl").exists() or (out / "candidates.jsonl").exists())
    try:
        candidates = CandidateList(out / "candidates.jsonl", recipe.settings.cap)
        before = len(candidates)
        objective = SimulationObjective(simulators, samples=samples, max_resimulations=max_resimulations)
        search = BeamSearch(recipe.settings, recipe.transformation(proxy, LANGUAGE_NAMES[lang]), objective,
                            constraints, candidates, recipe.name)
        sim_meters = _simulator_meters(simulators)
        start_meters = _copy(sum_meters([proxy.perturber.meter, proxy.translator.meter])), _copy(sum_meters(sim_meters))
        size = recipe.settings.initial_batch
        batches = [sources[i : i + size] for i in range(0, len(sources), size)]
        done = _done_batches(out / "batches.jsonl")
        untranslated = 0
        for number, batch in enumerate(batches):
            if number not in done:
                translated = proxy.translate_questions([s.question for s in batch], lang, LANGUAGE_NAMES[lang])
                roots = []
                for source, target in zip(batch, translated, strict=True):
                    if isinstance(target, str):
                        untranslated += 1
                        search.stats.rejected[target.split(":", 1)[0]] += 1
                    else:
                        roots.append(root_node(source, target))
                search.run_batch(roots)
                append_json_line(out / "batches.jsonl", {"batch": number, "sources": [s.id for s in batch]})
            if progress is not None:
                progress(number + 1, len(batches))
        candidates.write_items(out / "candidate_items.jsonl")
        proxy_spend = _spend(sum_meters([proxy.perturber.meter, proxy.translator.meter]), start_meters[0])
        sim_spend = _spend(sum_meters(sim_meters), start_meters[1])
        meter = objective.meter
        sim_spend = sim_spend.model_copy(update={"calls": meter.questions, "seconds": meter.seconds})
        account = _account(recipe, lang, sources, candidates, before, untranslated, search, objective,
                           proxy_spend, sim_spend, time.monotonic() - started)
        atomic_write_json(out / "account.json", account.model_dump(mode="json"))
        return account
    finally:
        run.close()


def _account(
    recipe: Recipe, lang: str, sources: Sequence[SourceQuestion], candidates: CandidateList, before: int,
    untranslated: int, search: BeamSearch, objective: SimulationObjective, proxy: Spend, sim: Spend, seconds: float,
) -> ProbeAccount:
    converted = len({r.source_id for r in candidates.records()} & {s.id for s in sources})
    found = len(candidates) - before
    total = {k: getattr(proxy, k) + getattr(sim, k) for k in Spend.model_fields}
    stats = search.stats
    return ProbeAccount(
        recipe=recipe.name, lang=lang, sources=len(sources), untranslated=untranslated, converted=converted,
        conversion_rate=converted / len(sources) if sources else 0.0, candidates=len(candidates), found_now=found,
        scored=stats.scored, unscored=stats.unscored, invalid_answers=objective.meter.invalid_answers,
        duplicates=stats.duplicates, dropped_by_cap=stats.dropped_by_cap, rejected=dict(stats.rejected),
        proxy=proxy, simulation=sim, seconds=seconds,
        per_found_pair=Spend(**{k: v / found for k, v in total.items()}) if found else None,
    )


def _simulator_meters(simulators: Sequence[Simulator]) -> list[CostMeter]:
    """The cost meters of simulators that answer through a StructuredClient (generative ones)."""
    return [s.client.meter for s in simulators if isinstance(getattr(s, "client", None), StructuredClient)]


def _copy(meter: CostMeter) -> CostMeter:
    return sum_meters([meter])


def _spend(now: CostMeter, start: CostMeter) -> Spend:
    return Spend(
        calls=now.calls - start.calls, prompt_tokens=now.prompt_tokens - start.prompt_tokens,
        completion_tokens=now.completion_tokens - start.completion_tokens,
        seconds=now.seconds - start.seconds, cost_usd=now.cost_usd - start.cost_usd,
    )


def _done_batches(path: Path) -> set[int]:
    """Numbers of the batches a previous invocation finished."""
    if not path.exists():
        return set()
    cut_torn_last_line(path)
    return {int(record["batch"]) for _, record in iter_json_lines(path)}
