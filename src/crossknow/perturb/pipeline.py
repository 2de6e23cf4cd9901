"""`crossknow perturb`: perturbed variants of sampled training sequences (full paper, section 5.1).

The rewrite stage's shards are resumable (`crossknow.perturb.rewrites`); token-level and partial variants are
recomputed on every run (deterministic and quick); variants.jsonl, failures.jsonl and summary.json are written
atomically at the end. Run again on the same directory, only rewrites no shard holds are asked.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from crossknow.data.hub_data import data_file
from crossknow.data.sequence_variants import (
    METHOD_ORDER,
    REWRITE_METHODS,
    TOKEN_METHODS,
    SequenceVariant,
    variant_label,
)
from crossknow.errors import CrossknowError
from crossknow.generation.cached_calls import CostMeter
from crossknow.generation.clients import ClientPool, MakeGenerator, Role
from crossknow.generation.structured import per_form, prompt_format_of
from crossknow.models.generator import Generator
from crossknow.models.registry import load_generator
from crossknow.perturb.completion_prompts import COMPLETION_MAX_TOKENS, check_completion_languages
from crossknow.perturb.prompts import language_name
from crossknow.perturb.records import SYNONYM_METHODS, PerturbationFailure, PerturbConfig, PerturbSummary, SummaryRow
from crossknow.perturb.rewrites import RewriteRequest, run_rewrites
from crossknow.perturb.sampling import Source, sample_documents
from crossknow.perturb.sentence_level import (
    RewriteResult,
    Segmented,
    partial_variants,
    rewrite_variants,
    rewritten_sentences,
    segment,
)
from crossknow.perturb.synonym_dictionary import SynonymDictionary, load_synonyms
from crossknow.perturb.synonyms import read_stop_words
from crossknow.perturb.token_level import TokenSettings, original_variant, token_variants
from crossknow.perturb.tokenizers import ModelTokens, Vocabulary, check_tokenizer_spec, load_spec_tokenizer
from crossknow.store.atomic import atomic_write, atomic_write_json
from crossknow.store.config_keys import volatile_keys
from crossknow.store.hashing import file_sha256
from crossknow.store.run_dir import RunDir

Progress = Callable[[str, int, int], None]
"""on_progress(stage, done, total): stage 'rewrites' or 'variants'."""
PATHS = ("corpus", "synonyms", "stop_words", "cache")
"""Settings that hold a path."""
METHOD_RANK = {m: k for k, m in enumerate(METHOD_ORDER)}


def _inputs(config: PerturbConfig, corpus: Path) -> dict[str, str]:
    """Every input file's SHA-256, by its local path (`corpus`: the file `config.corpus` names, perhaps a Hub
    dataset's)."""
    files = [corpus, config.synonyms, config.stop_words]
    for path in files:
        if path is not None and not Path(path).is_file():
            raise CrossknowError(f"file not found: {path}")
    return {str(path): file_sha256(path) for path in files if path is not None}


def _token_settings(config: PerturbConfig, model: ModelTokens, dictionary: SynonymDictionary | None,
                    stop_words: frozenset[str]) -> TokenSettings:
    vocabulary = None
    if "random" in config.methods:
        if config.random_tokenizer is None:
            vocabulary = Vocabulary(model.tokenizer, model.name, own=True)
        else:
            tokenizer, name = load_spec_tokenizer(config.random_tokenizer)
            vocabulary = Vocabulary(tokenizer, name, own=False)
    return TokenSettings(seed=config.seed, x=config.x, y=config.y, vocabulary=vocabulary, dictionary=dictionary,
                         stop_words=stop_words, cross_lang=config.cross_lang)


def rewrite_role(config: PerturbConfig) -> Role:
    """The rewrite generator's role: --base-url and --api-key-env, the config's temperature, seed, token budget and
    attempts."""
    assert config.generator is not None  # the config requires one for rewrites
    return Role(access=config.generator, temperature=config.temperature, seed=config.seed,
                max_tokens=config.max_tokens, max_attempts=config.max_attempts)


def _rewrite_generator(config: PerturbConfig, pool: ClientPool) -> Generator:
    """The rewrite generator, loaded into `pool` before the run directory opens; CrossknowError now when it is a
    base model and the completion form has no examples in a language of the run."""
    generator = pool.generator(config.generator.spec, rewrite_role(config))
    cross = config.cross_lang if "translation" in config.methods else None
    per_form(prompt_format_of(generator), chat=lambda: None,
             completion=lambda: check_completion_languages(config.lang, cross))()
    return generator


def _rewrite(config: PerturbConfig, sources: list[Source], segments: dict[str, Segmented], run: RunDir,
             pool: ClientPool, on_progress: Progress | None) -> tuple[dict, CostMeter]:
    """The rewrite stage's outcomes (module docstring) and what this invocation spent. A base model's one-line
    rewrites stop at `COMPLETION_MAX_TOKENS` tokens, or the run's max_tokens when lower."""
    assert config.generator is not None  # the config requires one for rewrites
    styles = [m for m in config.methods if m in REWRITE_METHODS]
    requests = []
    for source in sources:
        sentences = segments[source.doc.id].sentences
        for x in config.sentence_x:
            for index in rewritten_sentences(source.doc.id, len(sentences), x, config.seed) or []:
                requests += [RewriteRequest(source.doc.id, index, style, sentences[index], config.lang,
                                            config.cross_lang) for style in styles]
    role = rewrite_role(config)
    role = per_form(prompt_format_of(pool.generator(config.generator.spec, role)), chat=role,
                    completion=replace(role, max_tokens=min(config.max_tokens, COMPLETION_MAX_TOKENS)))
    try:
        client = pool.client(config.generator.spec, role)
        progress = (lambda done, total, _meter: on_progress("rewrites", done, total)) if on_progress else None
        results = run_rewrites(requests, client, run.stage("rewrites"), config.batch_size, progress)
    finally:
        pool.close()
    return results, client.meter


class _Tally:
    """Counts and summed edit distances per setting, as variants and failures go by."""

    def __init__(self, lengths: dict[str, int]):
        self.lengths = lengths
        """source_id -> the original's token count."""
        self.stats: dict[tuple, list] = {}
        self.failures: list[PerturbationFailure] = []
        self.variants = 0

    def add(self, line: SequenceVariant | PerturbationFailure) -> None:
        """Count one variant or failure."""
        entry = self.stats.setdefault((line.method, line.x, line.y, line.a), [0, 0, 0, 0.0])
        if isinstance(line, PerturbationFailure):
            entry[1] += 1
            self.failures.append(line)
            return
        self.variants += 1
        entry[0] += 1
        entry[2] += line.edit_distance
        entry[3] += line.edit_distance / max(1, self.lengths[line.source_id])

    def rows(self) -> list[SummaryRow]:
        """One row per setting, methods in the paper's order, then x, y and a ascending."""
        ordered = sorted(self.stats.items(), key=lambda item: (METHOD_RANK[item[0][0]], *(v or 0 for v in item[0][1:])))
        return [
            SummaryRow(method=method, label=variant_label(method, x, y, a), x=x, y=y, a=a, variants=n, failed=failed,
                       mean_edit_distance=round(total / n, 4) if n else None,
                       mean_edit_fraction=round(fraction / n, 4) if n else None)
            for (method, x, y, a), (n, failed, total, fraction) in ordered
        ]


def _variants_of(source: Source, config: PerturbConfig, settings: TokenSettings, segmented: Segmented | None,
                 results: dict[tuple[str, int, str], RewriteResult]) -> list[SequenceVariant | PerturbationFailure]:
    """Every asked variant of one sequence (or its failure), its original first."""
    token_methods = [m for m in config.methods if m in TOKEN_METHODS]
    styles = [m for m in config.methods if m in REWRITE_METHODS]
    made = [original_variant(source, config.seed), *token_variants(source, token_methods, settings)]
    if "partial" in config.methods:
        made += partial_variants(source, segmented, config.partial_unit, config.seed)
    if styles:
        assert segmented is not None  # rewrites always segment
        made += rewrite_variants(source, segmented, styles, config.sentence_x, config.seed, results)
    return made


def run_perturb(
    config: PerturbConfig, out: str | Path, on_progress: Progress | None = None,
    make_generator: MakeGenerator = load_generator,
) -> PerturbSummary:
    """Make (or resume making) every asked variant into the run directory `out`; return the summary."""
    started, out = time.monotonic(), Path(out)
    corpus = data_file(config.corpus)
    inputs = _inputs(config, corpus)
    for spec in (config.model, config.random_tokenizer):
        if spec is not None:
            check_tokenizer_spec(spec)
    styles = [m for m in config.methods if m in REWRITE_METHODS]
    if styles and config.generator is not None:
        rewrite_role(config).parse(config.generator.spec)
        for lang in (config.lang, config.cross_lang):  # fail now if the prompts cannot name a language
            language_name(lang)
    # every input is read and checked before a tokenizer or a model loads
    sampled = sample_documents(corpus, config.lang, config.n, config.seed, config.min_sentences)
    synonyms = any(m in SYNONYM_METHODS for m in config.methods)
    dictionary = load_synonyms(config.synonyms) if synonyms and config.synonyms else None
    stop_words = read_stop_words(config.stop_words)
    tokenizer, name = load_spec_tokenizer(config.model)
    model = ModelTokens(tokenizer, name, config.mask_token)
    mask = model.decode([model.mask_id]) if "mask" in config.methods else None
    settings = _token_settings(config, model, dictionary, stop_words)
    sources = [Source(doc, model) for doc in sampled]
    needs_sentences = styles or ("partial" in config.methods and config.partial_unit == "sentences")
    segments = {s.doc.id: segment(s.doc.text, s.doc.lang) for s in sources} if needs_sentences else {}
    pool = ClientPool(Path(config.cache) if config.cache else None, run_dir=Path(out), make_generator=make_generator)
    generator = _rewrite_generator(config, pool) if styles else None
    with RunDir(out) as run:
        run.open(config.model_dump(), inputs, volatile=volatile_keys(type(config)), paths=PATHS,
                 upgrade=type(config).recorded)
        results: dict[tuple[str, int, str], RewriteResult] = {}
        meter = CostMeter()
        if generator is not None:
            results, meter = _rewrite(config, sources, segments, run, pool, on_progress)
        tally = _Tally({s.doc.id: len(s.ids) for s in sources})

        def write(handle) -> None:
            for done, source in enumerate(sources, start=1):
                for line in _variants_of(source, config, settings, segments.get(source.doc.id), results):
                    tally.add(line)
                    if isinstance(line, SequenceVariant):
                        handle.write(line.model_dump_json() + "\n")
                if on_progress:
                    on_progress("variants", done, len(sources))

        atomic_write(out / "variants.jsonl", write)
        atomic_write(out / "failures.jsonl", lambda handle: handle.writelines(
            failure.model_dump_json() + "\n" for failure in tally.failures))
        summary = PerturbSummary(
            sequences_asked=config.n, sequences=len(sources), min_sentences=config.min_sentences,
            tokenizer=model.name, mask_token=mask,
            random_vocabulary=settings.vocabulary.name if settings.vocabulary else None, synonyms=config.synonyms,
            variants=tally.variants, failures=len(tally.failures), rewrite_calls=meter.calls,
            rewrite_cached_calls=meter.cached_calls, rewrite_cost_usd=round(meter.cost_usd, 6),
            rewrite_model=f"{generator.name}:{generator.model_id}" if generator is not None else None,
            rewrite_prompt_format=prompt_format_of(generator) if generator is not None else None,
            seconds=round(time.monotonic() - started, 2), rows=tally.rows(),
        )
        atomic_write_json(out / "summary.json", json.loads(summary.model_dump_json()))
    return summary
