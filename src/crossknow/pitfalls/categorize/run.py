"""`crossknow pitfalls categorize` as a library call; its stage, which a probe run shares, is in
`crossknow.pitfalls.categories`.

Pairs are read from release `<Language>.json` files (every pair: only the English side is classified), from
crossknow item files whose sides share a `pair_id` and from a probe's `candidates.jsonl`; a pair's own
`category` is kept as its reference label when it is one of the six.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated

from pydantic import Field

from crossknow.data.formats import detect_format, load_item_set
from crossknow.data.guarded import first_char
from crossknow.data.hub_data import data_file
from crossknow.data.jsonl import iter_json_lines, require, require_strings, write_invalid
from crossknow.data.pitfalls import language_code, load_pairs
from crossknow.data.schemas import InvalidRecord, MCItem, Record
from crossknow.errors import CrossknowError, InputError
from crossknow.generation.cached_calls import CostMeter
from crossknow.generation.clients import ClientPool, Role
from crossknow.generation.pricing import PriceTable
from crossknow.generation.structured import StructuredClient
from crossknow.models.access import GENERATING, ModelRole, RoleConfig, RoleKeys
from crossknow.pitfalls.categories import (
    CATEGORIES_FILE,
    CATEGORY_TABLE,
    CategoryLog,
    CategoryPair,
    CategoryRow,
    CategoryTable,
    candidate_pairs,
    category_table,
    classify_missing,
    reference_label,
)
from crossknow.pitfalls.older_runs import import_json_lines
from crossknow.store.atomic import atomic_write_json
from crossknow.store.config_keys import VOLATILE, volatile_keys
from crossknow.store.hashing import file_sha256
from crossknow.store.layout import Layout
from crossknow.store.run_dir import RunDir

Progress = Callable[[str, int, int, CostMeter], None]
"""on_progress(stage label, pairs done, pairs in all, what the classifier spent so far)."""


class CategorizeConfig(RoleConfig):
    """Everything that decides a categorize run."""

    ROLES = (RoleKeys("classifier", own=("base_url", "api_key_env", "device", "dtype", "concurrency", "timeout_s",
                                         *GENERATING)),)

    pairs: list[str] = Field(min_length=1, description="Pair file: a release <Language>.json, a crossknow item file "
                             "with pair ids (candidate_items.jsonl, items.jsonl) or a probe's candidates.jsonl.")
    classifier: ModelRole = Field(description="Model spec of the classifier LLM: default, hf:PATH, gguf:FILE, "
                                  "llamacpp:FILE or openai:MODEL[@URL] (without @URL: --base-url). A chat "
                                  "model answers as JSON, a base model (completion form, e.g. default) by one line "
                                  "read as a domain.")
    limit: int | None = Field(default=None, ge=1, description="Classify only the first N pairs of each file (unset: "
                              "all).")
    max_tokens: int = Field(default=256, ge=1, description="Most tokens of one classifier answer.")
    temperature: float = Field(default=0.0, ge=0, description="Classifier temperature (crossknow's choice: greedy).")
    seed: int = Field(default=0, description="Seed of the classifier's requests (attempt k uses seed + k).")
    max_attempts: int = Field(default=3, ge=1, description="Calls per pair before its answer counts as invalid.")
    batch_size: Annotated[int, VOLATILE] = Field(
        default=16, ge=1, description="Pairs per committed chunk; does not change results."
    )
    cache: Annotated[str | None, VOLATILE] = Field(
        default=None, description="SQLite request cache (unset: the user's cache directory)."
    )
    prices: Annotated[str | None, VOLATILE] = Field(
        default=None, description="YAML/JSON file of model prices (USD per 1M tokens)."
    )


class CategorizeMetrics(Record):
    """metrics.json of a categorize run."""

    classifier: str = Field(description="Model spec of the classifier.")
    files: list[str] = Field(description="The pair files, in order.")
    n_pairs: int = Field(description="Pairs read (after --limit), duplicates counted once.")
    n_duplicates: int = Field(description="Pairs read twice (same id and English question in two files), "
                              "classified and counted once.")
    n_skipped: int = Field(description="Records that are no pair to classify (an item file's pair without its "
                           "English or target item), listed in invalid.jsonl.")
    table: CategoryTable = Field(description="The paper's Table 4 from the classifier's categories.")
    reference: CategoryTable | None = Field(description="The same table from the input's own labels (the "
                                            "release's `category`) of the pairs that have one; null when none has.")
    n_compared: int = Field(description="Pairs with both a classifier category and a reference label.")
    agreement: float | None = Field(description="Share of those where the two agree; null when none.")
    pending: int = Field(description="Pairs left for a later run: their request failed in transport.")
    calls: int = Field(description="Classifier calls this invocation sent (cache hits excluded).")
    cached_calls: int = Field(description="Classifier calls this invocation answered from the request cache.")
    tokens: int = Field(description="Prompt and completion tokens this invocation sent.")
    cost_usd: float = Field(description="What this invocation's calls cost at the run's prices.")
    seconds: float = Field(description="Wall-clock seconds of this invocation, model loading included.")


# ---- reading pairs ----------------------------------------------------------------------------------------------


def read_category_pairs(path: str | Path, limit: int | None = None) -> tuple[list[CategoryPair], list[InvalidRecord]]:
    """The first `limit` pairs of a pair file (see the module docstring) and the records that are no pair;
    malformed input is an InputError naming the file, the line and the field."""
    path = Path(path)
    if not path.is_file():
        raise CrossknowError(f"pair file not found: {path}")
    if _is_candidate_file(path):
        return candidate_pairs(path, limit), []
    if detect_format(path) == "pitfalls":
        return _release(path, limit), []
    return _items(path, limit)


def _is_candidate_file(path: Path) -> bool:
    if first_char(path) != "{":
        return False
    try:
        _, first = next(iter_json_lines(path))
    except InputError:  # not JSON lines: detect_format tells what it is
        return False
    return {"english", "target", "recipe"} <= first.keys()


def _release(path: Path, limit: int | None) -> list[CategoryPair]:
    code = language_code(path)
    pairs = []
    for index, record in enumerate(load_pairs(path)[:limit]):
        line = index + 1
        question = require(record, "question", str, path, line)
        choices = require_strings(record, "choices", path, line)
        category = require(record, "category", str, path, line, optional=True)
        pairs.append(CategoryPair(f"{path.stem}:{index}", code, question, tuple(choices), reference_label(category)))
    return pairs


def _items(path: Path, limit: int | None) -> tuple[list[CategoryPair], list[InvalidRecord]]:
    item_set = load_item_set(path)
    grouped: dict[str, list[MCItem]] = {}
    for item in item_set.items:
        if not isinstance(item, MCItem) or item.pair_id is None:
            raise InputError(path, f"item {item.id!r} is no side of a pair: pairs are multiple-choice items with a "
                             "pair_id", field="pair_id")
        grouped.setdefault(item.pair_id, []).append(item)
    pairs, invalid = [], list(item_set.invalid)
    for pair_id, items in list(grouped.items())[:limit]:
        english = [item for item in items if item.lang == "en"]
        targets = [item for item in items if item.lang != "en"]
        if len(english) != 1 or len(targets) != 1:
            invalid.append(InvalidRecord(path=str(path), line=None, field="pair_id", item_id=pair_id, reason=(
                f"a pair is one English item and one target-language item; found "
                f"{', '.join(item.lang for item in items)}")))
            continue
        en = english[0]
        pairs.append(CategoryPair(pair_id, targets[0].lang, en.prompt, tuple(en.options),
                                  reference_label(en.metadata.get("category"))))
    return pairs, invalid


def read_all_pairs(paths: Sequence[str | Path], limit: int | None) -> tuple[list[CategoryPair], list[InvalidRecord],
                                                                            int]:
    """The pairs of every file, in order, the records that are no pair, and how many duplicates were left out;
    the same id with another English question in two files is an InputError."""
    seen: dict[str, tuple[CategoryPair, Path]] = {}
    pairs, invalid, duplicates = [], [], 0
    for path in map(Path, paths):
        found, skipped = read_category_pairs(path, limit)
        invalid += skipped
        for pair in found:
            if pair.pair_id in seen:
                other, where = seen[pair.pair_id]
                if other.question != pair.question:
                    raise InputError(path, f"pair {pair.pair_id!r} is also in {where} with another English question",
                                     field="pair_id")
                duplicates += 1
                continue
            seen[pair.pair_id] = (pair, path)
            pairs.append(pair)
    return pairs, invalid, duplicates


# ---- the run ----------------------------------------------------------------------------------------------------


def classifier_role(config: CategorizeConfig) -> Role:
    """The classifier's role: --base-url and --api-key-env, the config's temperature, seed, token budget and
    attempts."""
    return Role(access=config.classifier, temperature=config.temperature, seed=config.seed,
                max_tokens=config.max_tokens, max_attempts=config.max_attempts)


def classifier_pool(config: CategorizeConfig, run_dir: Path | None = None) -> ClientPool:
    """The pool the classifier comes from: the config's cache and prices; it records the classifier in `run_dir`."""
    return ClientPool(Path(config.cache) if config.cache else None,
                      PriceTable.load(config.prices) if config.prices else None, run_dir=run_dir)


def classifier_client(config: CategorizeConfig, pool: ClientPool) -> StructuredClient:
    """The structured client of `config.classifier` from `pool`."""
    return pool.client(config.classifier.spec, classifier_role(config))


CATEGORIZE_LAYOUT = Layout("pitfalls categorize", 2, (CATEGORY_TABLE,),
                           {1: lambda run: import_json_lines(run, CATEGORY_TABLE, CATEGORIES_FILE)})
"""A categorize run directory: its categories table (layout 1 kept categories.jsonl as an append-only log)."""


def run_categorize(config: CategorizeConfig, out: str | Path, client: StructuredClient | None = None,
                   on_progress: Progress | None = None) -> CategorizeMetrics:
    """Classify `config.pairs` into the run directory `out` and write metrics.json (see the module docstring);
    `client` replaces the classifier `config` names (built only when a pair is missing)."""
    started, out = time.monotonic(), Path(out)
    files = [data_file(path) for path in config.pairs]
    pairs, invalid, duplicates = read_all_pairs(files, config.limit)  # bad input fails before any model loads
    if client is None:
        classifier_role(config).parse(config.classifier.spec)
    built: list[StructuredClient] = [client] if client is not None else []
    pool = classifier_pool(config, out)

    def get_client() -> StructuredClient:
        if not built:
            built.append(classifier_client(config, pool))
        return built[0]

    def meter() -> CostMeter:
        return built[0].meter if built else CostMeter()

    try:
        with RunDir(out) as run:
            run.open(config.model_dump(), {str(p): file_sha256(p) for p in files},
                     volatile=volatile_keys(type(config)), paths=("pairs", "cache", "prices"), growable=("limit",),
                     upgrade=type(config).recorded, layout=CATEGORIZE_LAYOUT)
            write_invalid(out / "invalid.jsonl", invalid)
            log = CategoryLog(out)
            progress = (lambda done, total: on_progress("categorize", done, total, meter())) if on_progress else None
            pending = classify_missing(pairs, log, get_client, config.batch_size, progress)
            log.export()
            rows = [log.rows[pair.pair_id] for pair in pairs if pair.pair_id in log.rows]
            metrics = _metrics(config, rows, len(pairs), duplicates, len(invalid), pending, meter(),
                               time.monotonic() - started)
            atomic_write_json(out / "metrics.json", metrics.model_dump())
            return metrics
    finally:
        pool.close()


def _metrics(config: CategorizeConfig, rows: Sequence[CategoryRow], n_pairs: int, duplicates: int, skipped: int,
             pending: int, meter: CostMeter, seconds: float) -> CategorizeMetrics:
    referenced = [row for row in rows if row.reference is not None]
    compared = [row for row in referenced if row.category is not None]
    return CategorizeMetrics(
        classifier=config.classifier.spec, files=list(config.pairs), n_pairs=n_pairs, n_duplicates=duplicates,
        n_skipped=skipped, table=category_table([(row.lang, row.category) for row in rows]),
        reference=category_table([(row.lang, row.reference) for row in referenced]) if referenced else None,
        n_compared=len(compared),
        agreement=sum(row.category == row.reference for row in compared) / len(compared) if compared else None,
        pending=pending, calls=meter.calls, cached_calls=meter.cached_calls,
        tokens=meter.prompt_tokens + meter.completion_tokens, cost_usd=round(meter.cost_usd, 6),
        seconds=round(seconds, 3),
    )
