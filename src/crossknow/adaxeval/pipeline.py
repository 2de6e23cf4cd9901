"""`crossknow generate`: the AdaXEval pipeline over a bilingual corpus, resumable at every stage.

Stages, each a table of shards under the run directory's `stages/` (see `stages.py`):
split -> ner -> (sample) -> facts -> triples -> cloze -> paraphrase -> distractors -> quality -> assembly
(`dataset/`). Stage 'triples' is the short paper's step (section 2.1) in which the writer regenerates
the detector's triple from the sentence; the cloze uses the regenerated triple (see `triples.py`).
The run directory also holds config.yaml (the resolved config, seeds included), inputs.json (the
corpus hash), models.json (each spec's backend, model id and prompt format), summary.json (the stage
table, rejections by reason, surface cues, cost) and invalid.jsonl (every input whose LLM output stayed
invalid, with the error, the raw output and every rejected output with its reason).
Run again on the same directory, it decides only what no shard holds; model calls come from the
request cache when they were made before.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import crossknow
from crossknow.adaxeval.assemble import write_dataset
from crossknow.adaxeval.clients import Clients, MakeGenerator, check_spec
from crossknow.adaxeval.distractors import distractor_rows
from crossknow.adaxeval.facts import ANSWERS, KeepRule, default_threshold, fact_rows
from crossknow.adaxeval.filters import quality_rows
from crossknow.adaxeval.ner import NerBackend, check_ner_spec, make_ner, ner_rows
from crossknow.adaxeval.prompts import TASKS, PromptTable
from crossknow.adaxeval.queries import cloze_rows, paraphrase_rows
from crossknow.adaxeval.records import (
    VOLATILE,
    ClozeRecord,
    DistractorRecord,
    EntityRecord,
    FactRecord,
    GenerateConfig,
    GenerateSummary,
    QualityRecord,
    QueryRecord,
    SentenceRecord,
    SplitRecord,
    TripleRecord,
)
from crossknow.adaxeval.split import split_document
from crossknow.adaxeval.stages import StageRow, StageStore, normalise, run_chunks
from crossknow.adaxeval.summary import binary_confidence, invalid_lines, rejection_counts, stage_counts, total_cost
from crossknow.adaxeval.triples import triple_rows
from crossknow.data.corpus import Document, pair_documents, read_corpus
from crossknow.data.schemas import Record
from crossknow.errors import CrossknowError
from crossknow.generation.structured import CostMeter, sum_meters
from crossknow.models.checkpoint_cache import cache_dir
from crossknow.models.registry import load_generator
from crossknow.store.atomic import atomic_write_json, atomic_write_text
from crossknow.store.hashing import file_sha256
from crossknow.store.run_dir import RunDir

Progress = Callable[[str, int, int, CostMeter], None]
"""on_progress(stage, done, total, spent so far by this invocation)."""

LOCAL_CHUNK = 256
"""Inputs per shard of the stages that call no model (split, heuristic or spaCy NER)."""


def resolve_config(config: GenerateConfig, prompts: PromptTable) -> dict:
    """config.yaml: the config with the threshold, NER backends and prompt digest resolved."""
    unknown = sorted(set(config.ner) - set(config.langs))
    if unknown:
        raise CrossknowError(f"--ner names languages not in --langs: {', '.join(unknown)}")
    threshold = config.threshold if config.threshold is not None else default_threshold(len(config.detectors))
    return config.model_dump() | {
        "threshold": round(threshold, 6),
        "ner": {lang: config.ner.get(lang, "heuristic") for lang in config.langs},
        "prompts_digest": prompts.digest(config.langs),
    }


def _by_lang(
    rows_for: Callable[[str, list], list], values: list, lang_of: Callable[[object], str]
) -> list:
    """Apply `rows_for(lang, values_of_lang)` per language of a mixed chunk; rows back in chunk order."""
    rows: list = [None] * len(values)
    for lang in dict.fromkeys(lang_of(v) for v in values):
        positions = [i for i, v in enumerate(values) if lang_of(v) == lang]
        for i, row in zip(positions, rows_for(lang, [values[i] for i in positions]), strict=True):
            rows[i] = row
    return rows


def _taken(store: StageStore, text: Callable[[Record], str]) -> dict[str, str]:
    """Normalised `text` of each kept row of `store` -> its key: what another fact may not have too."""
    return {normalise(text(row.record)): row.key for row in store.rows() if row.status == "kept"}


def _kept(store: StageStore, order: Callable[[StageRow], tuple]) -> list:
    return [row.record for row in sorted(store.rows(), key=order) if row.status == "kept"]


def run_generate(
    config: GenerateConfig,
    out: Path,
    on_progress: Progress | None = None,
    make_generator: MakeGenerator = load_generator,
) -> GenerateSummary:
    """Run (or resume) the pipeline into the run directory `out`; return the summary."""
    started = time.monotonic()
    corpus_path = Path(config.corpus)
    if not corpus_path.is_file():
        raise CrossknowError(f"corpus file not found: {corpus_path}")
    prompts = PromptTable.load(config.prompts)
    unused_facts = {task for order, (task, _) in ANSWERS.items() if order != config.fact_order}
    prompts.check(config.langs, [task for task in TASKS if task != "ner" and task not in unused_facts])
    resolved = resolve_config(config, prompts)
    documents = read_corpus(corpus_path)
    pairs = pair_documents(documents, config.langs)
    if not pairs.pairs:
        raise CrossknowError(f"{corpus_path}: no document pairs in {' and '.join(config.langs)} (metadata.pair_id)")
    llm_ner = [spec.removeprefix("llm:") for spec in resolved["ner"].values() if spec.startswith("llm:")]
    if llm_ner:
        prompts.check(config.langs, ["ner"])
    for spec in dict.fromkeys([*config.detectors, config.writer, *llm_ner]):
        check_spec(spec, config.base_url)
    cache_path = Path(config.cache) if config.cache else cache_dir() / "requests.sqlite"
    clients = Clients(config, out, cache_path, make_generator)
    backends: dict[str, NerBackend] = {}  # the local ones now (a missing spaCy model fails here), llm: on use
    for lang, spec in resolved["ner"].items():
        check_ner_spec(spec)
        if not spec.startswith("llm:"):
            backends[lang] = make_ner(spec, clients.get, prompts)
    run = RunDir(out)
    run.open(resolved, {str(corpus_path): file_sha256(corpus_path)}, volatile=VOLATILE)
    position = {doc.id: k for k, doc in enumerate(documents)}

    def order(row: StageRow) -> tuple[int, int]:
        if row.key in position:  # a document (stage split)
            return (position[row.key], -1)
        doc_id, _, index = row.key.rpartition("#")  # a sentence: '{doc_id}#{index}'
        return (position[doc_id], int(index))

    def progress(stage: str, done: int, total: int) -> None:
        if on_progress:
            on_progress(stage, done, total, sum_meters(clients.meters()))

    pending: dict[str, int] = {}
    try:
        pair_ids = list(pairs.pairs)
        if config.docs is not None and config.docs < len(pair_ids):
            chosen = set(random.Random(f"{config.seed}:docs").sample(pair_ids, config.docs))
            pair_ids = [pid for pid in pair_ids if pid in chosen]
        docs: list[Document] = [pairs.pairs[pid][lang] for pid in pair_ids for lang in config.langs]
        docs.sort(key=lambda doc: position[doc.id])

        split = StageStore("split", run.stage("split"), SplitRecord)
        run_chunks(
            split, [(doc.id, doc) for doc in docs],
            lambda chunk: [_split_row(doc) for doc in chunk], LOCAL_CHUNK, progress,
        )
        sentences: list[SentenceRecord] = [s for record in _kept(split, order) for s in record.sentences]

        ner = StageStore("ner", run.stage("ner"), EntityRecord)

        def ner_for(lang: str, chunk: list[SentenceRecord]) -> list:
            if lang not in backends:
                backends[lang] = make_ner(resolved["ner"][lang], clients.get, prompts)
            return ner_rows(backends[lang], chunk)

        result = run_chunks(
            ner, [(s.id, s) for s in sentences],
            lambda chunk: _by_lang(ner_for, chunk, lambda s: s.lang),
            config.batch_size if llm_ner else LOCAL_CHUNK, progress,
        )
        if result.pending:  # the sample below is drawn from every kept sentence: all must be known first
            _incomplete({"ner": len(result.pending)})
        candidates = [record.sentence for record in _kept(ner, order)]
        if config.sample is not None:
            candidates = _sample(candidates, config.sample, config.seed, config.langs)

        detectors = None
        rule = KeepRule(config.fact_rule, resolved["threshold"], config.min_yes)

        def facts_for(chunk: list[SentenceRecord]) -> list:
            nonlocal detectors
            detectors = detectors or [(spec, clients.get(spec)) for spec in config.detectors]
            return fact_rows(chunk, detectors, prompts, rule, config.fact_order)

        facts = StageStore("facts", run.stage("facts"), FactRecord)
        result = run_chunks(facts, [(s.id, s) for s in candidates], facts_for, config.batch_size, progress)
        pending["facts"] = len(result.pending)

        def writer() -> tuple:
            return (config.writer, clients.get(config.writer))

        chosen_ids = {s.id for s in candidates}
        triples = StageStore("triples", run.stage("triples"), TripleRecord)
        result = run_chunks(
            triples, [(f.sentence.id, f) for f in _kept(facts, order) if f.sentence.id in chosen_ids],
            lambda chunk: triple_rows(chunk, writer(), prompts), config.batch_size, progress,
        )
        pending["triples"] = len(result.pending)

        clozes = StageStore("cloze", run.stage("cloze"), ClozeRecord)
        result = run_chunks(
            clozes, [(t.fact.sentence.id, t) for t in _kept(triples, order)],
            lambda chunk: cloze_rows(chunk, writer(), prompts, _taken(clozes, lambda r: r.cloze)), config.batch_size,
            progress,
        )
        pending["cloze"] = len(result.pending)

        queries = StageStore("paraphrase", run.stage("paraphrase"), QueryRecord)
        result = run_chunks(
            queries, [(c.fact.sentence.id, c) for c in _kept(clozes, order)],
            lambda chunk: paraphrase_rows(chunk, writer(), prompts, _taken(queries, lambda r: r.question)),
            config.batch_size, progress,
        )
        pending["paraphrase"] = len(result.pending)

        distractors = StageStore("distractors", run.stage("distractors"), DistractorRecord)
        result = run_chunks(
            distractors, [(q.fact.sentence.id, q) for q in _kept(queries, order)],
            lambda chunk: distractor_rows(chunk, writer(), prompts), config.batch_size, progress,
        )
        pending["distractors"] = len(result.pending)

        def partner(pair_id: str, lang: str) -> tuple[str, str]:
            other = next(code for code in config.langs if code != lang)
            return other, pairs.pairs[pair_id][other].text

        quality = StageStore("quality", run.stage("quality"), QualityRecord)
        result = run_chunks(
            quality, [(d.query.fact.sentence.id, d) for d in _kept(distractors, order)],
            lambda chunk: quality_rows(chunk, writer(), prompts, partner, config.quality_filter),
            config.batch_size, progress,
        )
        pending["quality"] = len(result.pending)

        stores = [split, ner, facts, triples, clozes, queries, distractors, quality]
        if any(pending.values()):
            _incomplete(pending)
        kept = _kept(quality, order)
        partners = {pid: {lang: doc.id for lang, doc in members.items()} for pid, members in pairs.pairs.items()}
        files = write_dataset(out, kept, config.langs, config.seed, partners)
        atomic_write_text(out / "invalid.jsonl", "".join(invalid_lines(stores)))
        files["invalid"] = "invalid.jsonl"
        meter = sum_meters(clients.meters())
        lengths = {lang: [r.item for r in kept if r.item.query.fact.sentence.lang == lang] for lang in config.langs}
        summary = GenerateSummary(
            counts=stage_counts(
                stores, config.langs, len(pair_ids), candidates if config.sample else None, config.fact_rule
            ),
            unpaired_documents=len(pairs.unpaired),
            length_ratio={lang: _mean([i.length_ratio for i in items]) for lang, items in lengths.items()},
            answer_longest={lang: _mean([float(i.answer_longest) for i in items]) for lang, items in lengths.items()},
            binary_confidence=binary_confidence(facts),
            rejections=rejection_counts(stores),
            cost_usd=round(total_cost(stores), 6),
            calls_this_run=meter.calls,
            cached_calls_this_run=meter.cached_calls,
            files=files,
            models=clients.models(),
            seconds=round(time.monotonic() - started, 3),
            crossknow_version=crossknow.__version__,
        )
        atomic_write_json(out / "summary.json", summary.model_dump())
        return summary
    finally:
        clients.close()
        run.close()


def _incomplete(pending: dict[str, int]) -> None:
    """Stop without writing the dataset: some inputs got no answer (their requests failed in transport)."""
    where = ", ".join(f"{stage} {n}" for stage, n in pending.items() if n)
    raise CrossknowError(
        f"{sum(pending.values())} inputs got no answer from the server ({where}); the dataset was not written. "
        "Run the same command again to retry them (everything else is kept)."
    )


def _split_row(doc: Document) -> StageRow[SplitRecord]:
    sentences = split_document(doc)
    record = SplitRecord(doc_id=doc.id, lang=doc.lang, sentences=sentences)
    return StageRow(doc.id, doc.lang, "kept" if sentences else "dropped", f"{len(sentences)} sentences", record)


def _sample(sentences: list[SentenceRecord], n: int, seed: int, langs: Sequence[str]) -> list[SentenceRecord]:
    """Up to `n` sentences per language, drawn with `seed`; the canonical order is kept."""
    chosen: set[str] = set()
    for lang in langs:
        ids = [s.id for s in sentences if s.lang == lang]
        chosen.update(random.Random(f"{seed}:{lang}:sentences").sample(ids, min(n, len(ids))))
    return [s for s in sentences if s.id in chosen]


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None

