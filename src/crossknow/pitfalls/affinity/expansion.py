"""`crossknow pitfalls expand`: seed pairs translated into the other languages (section 3.3, Appendix B).

A seed's original part goes out with its choices and answer as one structured output, valid only without the
release's flaws; its inserted text is translated apart and stays on its side, and the parts are joined by one
space (crossknow's choice: the release joins them with none). Rows are committed per chunk to the `expanded`
stage, so a killed run resumes; items.jsonl and metrics.json are written at the end.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import pyarrow as pa

from crossknow.data.jsonl import write_invalid, write_jsonl
from crossknow.data.languages import language_name
from crossknow.data.schemas import MCItem
from crossknow.errors import CrossknowError
from crossknow.generation.cached_calls import CostMeter
from crossknow.generation.clients import ClientPool, Role
from crossknow.generation.pricing import PriceTable
from crossknow.generation.structured import TRANSPORT_FAILURE
from crossknow.pitfalls.affinity.expansion_records import (
    EXPANDED_SCHEMA,
    ExpandConfig,
    ExpandedRow,
    ExpandMetrics,
)
from crossknow.pitfalls.affinity.seeds import SeedFile, SeedPair, read_seed_file, sample_seeds
from crossknow.pitfalls.pair_translation import INVALID_OUTPUT, drop_reason
from crossknow.pitfalls.pairs import Perturbation
from crossknow.pitfalls.proxy import ProxyLLM
from crossknow.pitfalls.simulate import MCQuestion
from crossknow.store.atomic import atomic_write_json
from crossknow.store.config_keys import volatile_keys
from crossknow.store.hashing import file_sha256
from crossknow.store.run_dir import RunDir

Progress = Callable[[str, int, int, CostMeter], None]
"""on_progress(stage label, expansions done, expansions in all, what the proxy spent so far)."""

def translate_seeds(
    proxy: ProxyLLM, seeds: Sequence[SeedPair], lang: str, expand_from: str
) -> list[ExpandedRow | None]:
    """Each seed pair translated into `lang` (an ExpandedRow, made or dropped), or None where a request
    failed in transport (asked again by the next run); see the module docstring."""
    language = language_name(lang)
    parts = [seed.target_parts if expand_from == "seed" else seed.english_parts for seed in seeds]
    originals = proxy.translate_questions(
        [MCQuestion(p.original, p.choices, seed.english.answer, seed.lang if expand_from == "seed" else "en")
         for p, seed in zip(parts, seeds, strict=True)], lang, language)
    inserted = proxy.translate([text for p in parts for text in (p.before, p.after)], language)
    rows: list[ExpandedRow | None] = []
    for i, seed in enumerate(seeds):
        (before, before_error), (after, after_error) = inserted[2 * i], inserted[2 * i + 1]
        original, errors = originals[i], [e for e in (before_error, after_error) if e]
        if isinstance(original, str):
            errors.insert(0, original)
        if any(TRANSPORT_FAILURE in error for error in errors):
            rows.append(None)
        elif errors or not isinstance(original, MCQuestion) or before is None or after is None:
            reason = drop_reason(errors[0]) if errors else INVALID_OUTPUT
            rows.append(_row(seed, lang, None, f"{reason}: {'; '.join(errors)}"))
        else:
            _, joined = Perturbation("", "", before, after, None).apply(seed.english, original)
            rows.append(_row(seed, lang, joined, None))
    return rows


def _row(seed: SeedPair, lang: str, question: MCQuestion | None, error: str | None) -> ExpandedRow:
    return ExpandedRow(pair_id=f"{seed.id}>{lang}", seed_id=seed.id, seed_lang=seed.lang, lang=lang,
                       question=question.question if question else None,
                       choices=list(question.choices) if question else None, answer=seed.english.answer, error=error)


def proxy_role(config: ExpandConfig) -> Role:
    """The translator's role: how it is reached (`config.proxy`), the config's output cap and attempts (`ProxyLLM`
    sets its temperatures)."""
    return Role(access=config.proxy, max_tokens=config.max_tokens, max_attempts=config.max_attempts)


def expand_pool(config: ExpandConfig, run_dir: Path | None = None) -> ClientPool:
    """The pool the translator comes from: the config's cache and prices; it records the translator in `run_dir`."""
    return ClientPool(Path(config.cache) if config.cache else None,
                      PriceTable.load(config.prices) if config.prices else None, run_dir=run_dir)


def run_expand(
    config: ExpandConfig, out: Path, proxy: ProxyLLM | None = None, on_progress: Progress | None = None,
) -> ExpandMetrics:
    """Expand `config.seeds` into the run directory `out` and return the metrics (see the module docstring).
    `proxy` is the translator; None builds `config.proxy` when a translation is first needed."""
    started = time.monotonic()
    files = [read_seed_file(path) for path in config.seeds]
    languages = [seed_file.lang for seed_file in files]
    if len(set(languages)) != len(languages):
        raise CrossknowError(f"two seed files of one language among {', '.join(config.seeds)}")
    sampled = {f.lang: sample_seeds(f, config.per_seed, config.sample_seed) for f in files}
    if proxy is None:
        proxy_role(config).parse(config.proxy.spec)
    built: list[ProxyLLM] = [proxy] if proxy is not None else []
    pool = expand_pool(config, out)
    try:
        return _expand(config, out, files, languages, sampled, built, pool, on_progress, started)
    finally:
        pool.close()


def _expand(config: ExpandConfig, out: Path, files: list[SeedFile], languages: list[str],
            sampled: dict[str, list[SeedPair]], built: list[ProxyLLM], pool: ClientPool,
            on_progress: Progress | None, started: float) -> ExpandMetrics:
    seeds = [seed for lang in languages for seed in sampled[lang]]
    with RunDir(out) as run:
        run.open(config.model_dump(), {str(f.path): file_sha256(f.path) for f in files},
                 volatile=volatile_keys(type(config)), upgrade=type(config).recorded,
                 paths=("seeds", "cache", "prices"))
        write_invalid(out / "invalid.jsonl", [record for f in files for record in f.invalid])
        stage, pending, total = run.stage("expanded"), 0, len(seeds) * len(languages)
        finished = len(stage.done_keys())
        for lang in languages:
            done = stage.done_keys()
            todo = [seed for seed in seeds if f"{seed.id}>{lang}" not in done]
            for start in range(0, len(todo), config.batch_size):
                chunk = todo[start : start + config.batch_size]
                own = [seed for seed in chunk if seed.lang == lang]
                others = [seed for seed in chunk if seed.lang != lang]
                rows = [_row(seed, lang, seed.target, None) for seed in own]
                if others:
                    if not built:
                        built.append(ProxyLLM.from_pool(pool, config.proxy.spec, proxy_role(config)))
                    translated = translate_seeds(built[0], others, lang, config.expand_from)
                    pending += sum(row is None for row in translated)
                    rows += [row for row in translated if row is not None]
                if rows:
                    table = pa.Table.from_pylist([row.model_dump() for row in rows], schema=EXPANDED_SCHEMA)
                    stage.append(table, [row.pair_id for row in rows])
                finished += len(chunk)
                if on_progress:
                    on_progress(f"expand into {lang}", finished, total, _meter(built))
        rows = [ExpandedRow.model_validate(row) for row in stage.read(EXPANDED_SCHEMA).to_pylist()]
        write_jsonl(out / "items.jsonl", expanded_items(seeds, rows, languages))
        metrics = _metrics(files, sampled, rows, languages, pending, _meter(built), time.monotonic() - started)
        atomic_write_json(out / "metrics.json", metrics.model_dump())
        return metrics


def expanded_items(seeds: Sequence[SeedPair], rows: Sequence[ExpandedRow], languages: Sequence[str]) -> list[MCItem]:
    """Per made row, its English and its target item with one pair_id, seed by seed and language by language."""
    by_id = {row.pair_id: row for row in rows if row.error is None}
    items = []
    for seed in seeds:
        for lang in languages:
            row = by_id.get(f"{seed.id}>{lang}")
            if row is None or row.question is None or row.choices is None:
                continue
            metadata = {"seed_id": seed.id, "seed_lang": seed.lang, "source_id": seed.id, "source": seed.source,
                        "category": seed.category}
            for side_lang, question, choices in (("en", seed.english.question, list(seed.english.choices)),
                                                 (lang, row.question, row.choices)):
                items.append(MCItem(id=f"{row.pair_id}:{side_lang}", lang=side_lang, kind="question", prompt=question,
                                    options=choices, answer=row.answer, source_lang="en", pair_id=row.pair_id,
                                    metadata=metadata))
    return items


def _meter(built: Sequence[ProxyLLM]) -> CostMeter:
    return built[0].translator.meter if built else CostMeter()


def _metrics(files: Sequence[SeedFile], sampled: dict[str, list[SeedPair]], rows: Sequence[ExpandedRow],
             languages: list[str], pending: int, meter: CostMeter, seconds: float) -> ExpandMetrics:
    made = Counter(row.lang for row in rows if row.error is None)
    dropped = Counter(row.error.partition(":")[0] for row in rows if row.error is not None)
    return ExpandMetrics(
        languages=languages, seeds_read={f.lang: f.n_read for f in files},
        seeds_flawed={f.lang: len(f.invalid) for f in files}, seeds_sampled={k: len(v) for k, v in sampled.items()},
        made={lang: made[lang] for lang in languages}, dropped=dict(dropped), pending=pending, calls=meter.calls,
        cached_calls=meter.cached_calls, tokens=meter.prompt_tokens + meter.completion_tokens,
        cost_usd=round(meter.cost_usd, 6), seconds=round(seconds, 3),
    )
