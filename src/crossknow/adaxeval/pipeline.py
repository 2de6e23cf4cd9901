"""`crossknow generate`: the AdaXEval pipeline over a bilingual corpus, resumable at every stage.

Stages, each a table of shards under the run directory's `stages/` (see `stages.py`): split -> ner -> (sample) ->
facts -> triples -> cloze -> paraphrase -> distractors -> quality -> assembly (`dataset/`). Run again on the same
directory, it decides only what no shard holds. The run directory's files: docs/adaxeval.md.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from crossknow.adaxeval.assemble import write_dataset
from crossknow.adaxeval.clients import Clients, generator_role
from crossknow.adaxeval.distractors import distractor_rows
from crossknow.adaxeval.facts import ANSWERS, KeepRule, default_threshold, fact_rows
from crossknow.adaxeval.filters import quality_rows
from crossknow.adaxeval.ner import NER_TASKS, NerBackend, check_ner_spec, make_ner, ner_rows
from crossknow.adaxeval.prompts import TASKS, PromptTable
from crossknow.adaxeval.queries import cloze_rows, paraphrase_rows
from crossknow.adaxeval.records import (
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
from crossknow.data.corpus import CorpusPairs, Document, pair_documents, read_corpus
from crossknow.data.hub_data import data_file
from crossknow.data.schemas import Record
from crossknow.errors import CrossknowError
from crossknow.generation.cached_calls import CostMeter, sum_meters
from crossknow.generation.clients import MakeGenerator
from crossknow.models.registry import load_generator
from crossknow.store.atomic import atomic_write_json, atomic_write_text
from crossknow.store.cache_dir import cache_dir
from crossknow.store.config_keys import volatile_keys
from crossknow.store.hashing import file_sha256
from crossknow.store.run_dir import RunDir
from crossknow.version import VERSION

Progress = Callable[[str, int, int, CostMeter], None]
"""on_progress(stage, done, total, spent so far by this invocation)."""

LOCAL_CHUNK = 256
"""Inputs per shard of the stages that call no model (split, heuristic or spaCy NER)."""


def resolve_config(config: GenerateConfig, prompts: PromptTable) -> dict:
    """config.yaml: the config with the threshold, NER backends and prompt digest resolved."""
    unknown = sorted(set(config.ner) - set(config.langs))
    if unknown:
        raise CrossknowError(f"--ner names languages not in --langs: {', '.join(unknown)}")
    threshold = config.threshold if config.threshold is not None else default_threshold(len(config.detectors.specs))
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


@dataclass(frozen=True)
class _Run:
    """What the stages of one invocation share: the checked inputs, the clients and the open run directory."""

    config: GenerateConfig
    out: Path
    resolved: dict
    """config.yaml's content (`resolve_config`)."""
    prompts: PromptTable
    pairs: CorpusPairs
    position: dict[str, int]
    """Each document's position in the corpus, the order of every stage's rows."""
    clients: Clients
    ner_backends: dict[str, NerBackend]
    """The local ones from the start (a missing spaCy model fails before the run), llm: on first use."""
    run_dir: RunDir
    on_progress: Progress | None
    pending: dict[str, int] = field(default_factory=dict)
    """Inputs of each model stage after 'ner' whose request failed in transport, in stage order."""

    def order(self, row: StageRow) -> tuple[int, int]:
        """A row's place in the corpus: its document's position, then its sentence's index."""
        if row.key in self.position:  # a document (stage split)
            return (self.position[row.key], -1)
        doc_id, _, index = row.key.rpartition("#")  # a sentence: '{doc_id}#{index}'
        return (self.position[doc_id], int(index))

    def progress(self, stage: str, done: int, total: int) -> None:
        """Report a stage's progress with what this invocation has spent so far."""
        if self.on_progress:
            self.on_progress(stage, done, total, sum_meters(self.clients.meters()))

    def store(self, name: str, record: type[Record]) -> StageStore:
        """The committed rows of stage `name` in the run directory."""
        return StageStore(name, self.run_dir.stage(name), record)

    def writer(self) -> tuple:
        """(spec, client) of the writer, the model of every stage after 'facts'; its client is built on first use."""
        return (self.config.writer.spec, self.clients.get(self.config.writer.spec))

    def model_stage(
        self, store: StageStore, inputs: Sequence[tuple[str, object]], process: Callable[[list], list]
    ) -> None:
        """Decide `inputs` into `store` in chunks of --batch-size; count those whose request failed in transport."""
        result = run_chunks(store, inputs, process, self.config.batch_size, self.progress)
        self.pending[store.name] = len(result.pending)


def run_generate(
    config: GenerateConfig,
    out: Path,
    on_progress: Progress | None = None,
    make_generator: MakeGenerator = load_generator,
) -> GenerateSummary:
    """Run (or resume) the pipeline into the run directory `out`; return the summary."""
    started = time.monotonic()
    run = _open_run(config, out, on_progress, make_generator)
    try:
        pair_ids, docs = _chosen_documents(run)
        split = _split(run, docs)
        ner = _ner(run, split)
        candidates = _candidates(run, ner)
        facts = _facts(run, candidates)
        triples = _triples(run, facts, candidates)
        clozes = _cloze(run, triples)
        queries = _paraphrase(run, clozes)
        distractors = _distractors(run, queries)
        quality = _quality(run, distractors)

        stores = [split, ner, facts, triples, clozes, queries, distractors, quality]
        if any(run.pending.values()):
            _incomplete(run.pending)
        kept = _kept(quality, run.order)
        files = _assemble(run, kept, stores)
        summary = _summary(run, stores, kept, files, len(pair_ids), candidates, started)
        atomic_write_json(out / "summary.json", summary.model_dump())
        return summary
    finally:
        run.clients.close()
        run.run_dir.close()


def _open_run(
    config: GenerateConfig, out: Path, on_progress: Progress | None, make_generator: MakeGenerator
) -> _Run:
    """Check everything that can be checked before the run directory is made (corpus, prompts, pairs, model and
    NER specs, local NER backends), then open it."""
    corpus_path = data_file(config.corpus)
    if not corpus_path.is_file():
        raise CrossknowError(f"corpus file not found: {corpus_path}")
    prompts = PromptTable.load(config.prompts)
    unused_facts = {task for order, (task, _) in ANSWERS.items() if order != config.fact_order}
    prompts.check(config.langs, [task for task in TASKS if task not in NER_TASKS and task not in unused_facts])
    resolved = resolve_config(config, prompts)
    documents = read_corpus(corpus_path)
    pairs = pair_documents(documents, config.langs)
    if not pairs.pairs:
        raise CrossknowError(f"{corpus_path}: no document pairs in {' and '.join(config.langs)} (metadata.pair_id)")
    _check_models(config, resolved, prompts)
    cache_path = Path(config.cache) if config.cache else cache_dir() / "requests.sqlite"
    clients = Clients(config, out, cache_path, make_generator)
    backends = _local_ner_backends(resolved, clients, prompts)
    run_dir = RunDir(out)
    run_dir.open(resolved, {str(corpus_path): file_sha256(corpus_path)}, volatile=volatile_keys(type(config)),
                 upgrade=type(config).recorded)
    position = {doc.id: k for k, doc in enumerate(documents)}
    return _Run(config, out, resolved, prompts, pairs, position, clients, backends, run_dir, on_progress)


def _check_models(config: GenerateConfig, resolved: dict, prompts: PromptTable) -> None:
    """The specs of the detectors, the writer and any llm: NER backend, and the NER prompts such a backend needs."""
    llm_ner = [spec.removeprefix("llm:") for spec in resolved["ner"].values() if spec.startswith("llm:")]
    if llm_ner:
        prompts.check(config.langs, NER_TASKS)
    for spec in dict.fromkeys([*config.detectors.specs, config.writer.spec, *llm_ner]):
        generator_role(config, spec).parse(spec)


def _local_ner_backends(resolved: dict, clients: Clients, prompts: PromptTable) -> dict[str, NerBackend]:
    """Every language's NER spec checked, and its backend made now unless it is llm: (made on first use)."""
    backends: dict[str, NerBackend] = {}  # the local ones now (a missing spaCy model fails here), llm: on use
    for lang, spec in resolved["ner"].items():
        check_ner_spec(spec)
        if not spec.startswith("llm:"):
            backends[lang] = make_ner(spec, clients.get, prompts)
    return backends


def _chosen_documents(run: _Run) -> tuple[list[str], list[Document]]:
    """The pairs this run works on (--docs of them drawn with the seed, else all) and their documents in corpus
    order."""
    config, pairs = run.config, run.pairs
    pair_ids = list(pairs.pairs)
    if config.docs is not None and config.docs < len(pair_ids):
        chosen = set(random.Random(f"{config.seed}:docs").sample(pair_ids, config.docs))
        pair_ids = [pid for pid in pair_ids if pid in chosen]
    docs: list[Document] = [pairs.pairs[pid][lang] for pid in pair_ids for lang in config.langs]
    docs.sort(key=lambda doc: run.position[doc.id])
    return pair_ids, docs


def _split(run: _Run, docs: list[Document]) -> StageStore:
    """Stage 'split': each document into sentences (no model)."""
    split = run.store("split", SplitRecord)
    run_chunks(
        split, [(doc.id, doc) for doc in docs],
        lambda chunk: [_split_row(doc) for doc in chunk], LOCAL_CHUNK, run.progress,
    )
    return split


def _ner(run: _Run, split: StageStore) -> StageStore:
    """Stage 'ner': the entities of every sentence, by its language's backend; the run stops here when a request
    failed in transport."""
    sentences: list[SentenceRecord] = [s for record in _kept(split, run.order) for s in record.sentences]
    ner = run.store("ner", EntityRecord)

    def ner_for(lang: str, chunk: list[SentenceRecord]) -> list:
        if lang not in run.ner_backends:
            run.ner_backends[lang] = make_ner(run.resolved["ner"][lang], run.clients.get, run.prompts)
        return ner_rows(run.ner_backends[lang], chunk)

    llm_ner = any(spec.startswith("llm:") for spec in run.resolved["ner"].values())
    result = run_chunks(
        ner, [(s.id, s) for s in sentences],
        lambda chunk: _by_lang(ner_for, chunk, lambda s: s.lang),
        run.config.batch_size if llm_ner else LOCAL_CHUNK, run.progress,
    )
    if result.pending:  # the sample (`_candidates`) is drawn from every kept sentence: all must be known first
        _incomplete({"ner": len(result.pending)})
    return ner


def _candidates(run: _Run, ner: StageStore) -> list[SentenceRecord]:
    """The sentences fact detection sees: every one 'ner' kept, or --sample of them per language."""
    config = run.config
    candidates = [record.sentence for record in _kept(ner, run.order)]
    if config.sample is not None:
        candidates = _sample(candidates, config.sample, config.seed, config.langs)
    return candidates


def _facts(run: _Run, candidates: list[SentenceRecord]) -> StageStore:
    """Stage 'facts': the detectors' verdicts on each candidate, kept by the fact rule."""
    config = run.config
    detectors = None
    rule = KeepRule(config.fact_rule, run.resolved["threshold"], config.min_yes)

    def facts_for(chunk: list[SentenceRecord]) -> list:
        nonlocal detectors
        detectors = detectors or [(spec, run.clients.get(spec)) for spec in config.detectors.specs]
        return fact_rows(chunk, detectors, run.prompts, rule, config.fact_order, config.calibrate_yes)

    facts = run.store("facts", FactRecord)
    run.model_stage(facts, [(s.id, s) for s in candidates], facts_for)
    return facts


def _triples(run: _Run, facts: StageStore, candidates: list[SentenceRecord]) -> StageStore:
    """Stage 'triples': the writer regenerates the triple of each kept fact among this run's candidates."""
    chosen_ids = {s.id for s in candidates}
    triples = run.store("triples", TripleRecord)
    run.model_stage(
        triples, [(f.sentence.id, f) for f in _kept(facts, run.order) if f.sentence.id in chosen_ids],
        lambda chunk: triple_rows(chunk, run.writer(), run.prompts),
    )
    return triples


def _cloze(run: _Run, triples: StageStore) -> StageStore:
    """Stage 'cloze': the writer blanks each regenerated triple's object; no two facts keep the same cloze."""
    clozes = run.store("cloze", ClozeRecord)
    run.model_stage(
        clozes, [(t.fact.sentence.id, t) for t in _kept(triples, run.order)],
        lambda chunk: cloze_rows(chunk, run.writer(), run.prompts, _taken(clozes, lambda r: r.cloze)),
    )
    return clozes


def _paraphrase(run: _Run, clozes: StageStore) -> StageStore:
    """Stage 'paraphrase': the writer turns each cloze into a question; no two facts keep the same question."""
    queries = run.store("paraphrase", QueryRecord)
    run.model_stage(
        queries, [(c.fact.sentence.id, c) for c in _kept(clozes, run.order)],
        lambda chunk: paraphrase_rows(chunk, run.writer(), run.prompts, _taken(queries, lambda r: r.question)),
    )
    return queries


def _distractors(run: _Run, queries: StageStore) -> StageStore:
    """Stage 'distractors': the writer's three wrong options for each question."""
    distractors = run.store("distractors", DistractorRecord)
    run.model_stage(
        distractors, [(q.fact.sentence.id, q) for q in _kept(queries, run.order)],
        lambda chunk: distractor_rows(chunk, run.writer(), run.prompts),
    )
    return distractors


def _quality(run: _Run, distractors: StageStore) -> StageStore:
    """Stage 'quality': the writer judges each item, in its language and against the paired document."""
    config, pairs = run.config, run.pairs

    def partner(pair_id: str, lang: str) -> tuple[str, str]:
        other = next(code for code in config.langs if code != lang)
        return other, pairs.pairs[pair_id][other].text

    quality = run.store("quality", QualityRecord)
    run.model_stage(
        quality, [(d.query.fact.sentence.id, d) for d in _kept(distractors, run.order)],
        lambda chunk: quality_rows(chunk, run.writer(), run.prompts, partner, config.quality_filter,
                                   config.calibrate_yes),
    )
    return quality


def _assemble(run: _Run, kept: list, stores: list[StageStore]) -> dict[str, str]:
    """Assembly: the sets of the items 'quality' kept under `dataset/`, and invalid.jsonl; the files written."""
    partners = {pid: {lang: doc.id for lang, doc in members.items()} for pid, members in run.pairs.pairs.items()}
    files = write_dataset(run.out, kept, run.config.langs, run.config.seed, partners)
    atomic_write_text(run.out / "invalid.jsonl", "".join(invalid_lines(stores)))
    files["invalid"] = "invalid.jsonl"
    return files


def _summary(
    run: _Run, stores: list[StageStore], kept: list, files: dict[str, str], n_pairs: int,
    candidates: list[SentenceRecord], started: float,
) -> GenerateSummary:
    """summary.json: the stage table, surface cues, rejections, cost and calls of the run started at `started`."""
    config = run.config
    meter = sum_meters(run.clients.meters())
    lengths = {lang: [r.item for r in kept if r.item.query.fact.sentence.lang == lang] for lang in config.langs}
    facts = next(store for store in stores if store.name == "facts")
    return GenerateSummary(
        counts=stage_counts(stores, config.langs, n_pairs, candidates if config.sample else None, config.fact_rule),
        unpaired_documents=len(run.pairs.unpaired),
        length_ratio={lang: _mean([i.length_ratio for i in items]) for lang, items in lengths.items()},
        answer_longest={lang: _mean([float(i.answer_longest) for i in items]) for lang, items in lengths.items()},
        binary_confidence=binary_confidence(facts),
        rejections=rejection_counts(stores),
        cost_usd=round(total_cost(stores), 6),
        calls_this_run=meter.calls,
        cached_calls_this_run=meter.cached_calls,
        files=files,
        models=run.clients.models(),
        seconds=round(time.monotonic() - started, 3),
        crossknow_version=VERSION,
    )


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

