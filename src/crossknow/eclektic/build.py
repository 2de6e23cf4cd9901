"""Build a new ECLEKTIC-style set from a multilingual document collection (section 3.1, Appendix A.1): `build_set`.

Select articles (`build_documents`), write a question and answer from each (`build_prompts`; for a base model
`build_completion`), translate them into every language that lacks the article, check each translation through
English (`build_pivot`, crossknow's addition), and write `questions.jsonl`, `review.csv` (`review_sheet`),
`invalid.jsonl` and `build.json` (`build_records`); every call goes through one client and the request cache.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from crossknow.data.hub_data import data_file
from crossknow.data.jsonl import write_invalid
from crossknow.data.schemas import InvalidRecord
from crossknow.eclektic.build_completion import (
    GENERATED_FIELD,
    answer_completion,
    answer_parser,
    completion_translation_parser,
    question_completion,
    question_parser,
    translation_completion,
)
from crossknow.eclektic.build_documents import SelectedDocument, read_documents, select_documents
from crossknow.eclektic.build_pivot import FIELDS, Texts, pivot_check
from crossknow.eclektic.build_prompts import (
    generation_prompt,
    parse_question_answer,
    question_answer_parser,
    translation_parser,
    translation_prompt,
)
from crossknow.eclektic.build_records import BuildConfig, BuildSummary, BuiltQuestion, Translation
from crossknow.eclektic.review_sheet import export_sheet
from crossknow.errors import CrossknowError
from crossknow.generation.ask import Ask, ChatPrompt, Prompt, Reading, TextOutput, TextParser
from crossknow.generation.cached_calls import CostMeter
from crossknow.generation.clients import Role
from crossknow.generation.structured import StructuredClient, StructuredOutcome
from crossknow.store.atomic import atomic_write, atomic_write_json
from crossknow.store.config_keys import volatile_keys
from crossknow.store.hashing import file_sha256
from crossknow.store.run_dir import RunDir

Progress = Callable[[str, int, int, CostMeter], None]
"""on_progress(step, done, total, what the client has spent so far in this invocation)."""
SUMMARY_FILE = "build.json"
QUESTIONS_FILE = "questions.jsonl"
INVALID_FILE = "invalid.jsonl"
SHEET_FILE = "review.csv"


@dataclass
class BuildResult:
    """What `build_set` produced (also written into the output directory)."""

    questions: list[BuiltQuestion]
    invalid: list[InvalidRecord]
    summary: BuildSummary
    out: Path


@dataclass(frozen=True)
class _Job:
    """One text to translate: key (q_id, kind, lang, field), where kind is 'forward' or 'back'."""

    key: tuple[str, str, str, str]
    in_lang: str
    out_lang: str
    text: str


def build_role(config: BuildConfig) -> Role:
    """The writer's role: how its model is reached (`config.model`), and the config's attempts, token budget,
    temperature and seed."""
    return Role(access=config.model, temperature=config.temperature, seed=config.seed,
                max_tokens=config.max_tokens, max_attempts=config.max_attempts)


def build_set(
    config: BuildConfig,
    make_client: Callable[[], StructuredClient],
    out: str | Path,
    *,
    on_progress: Progress | None = None,
) -> BuildResult:
    """Build the set `config` asks for with the client `make_client()` returns (the writer's, from a `ClientPool`
    with `build_role(config)`: its request cache and prices) into the directory `out`; the client, and so the
    writer's model, is made once the collection is read and checked.

    Writes the files listed in the module docstring; the same call again replays every model output
    from the cache and writes the same files. InputError for a malformed collection (file, line,
    field); CrossknowError when `out` holds a build with another config, or a review.csv edited since
    it was written (move it away first: a build never overwrites a reviewer's work)."""
    documents_file = data_file(config.documents)
    documents = read_documents(documents_file)
    with RunDir(Path(out)) as run:
        run.open(config.model_dump(), {str(documents_file): file_sha256(documents_file)},
                 volatile=volatile_keys(type(config)), upgrade=type(config).recorded,
                 has_results=(run.path / SUMMARY_FILE).exists(), paths=("documents",))
        selected, counts, outside = select_documents(
            documents, config.languages, min_chars=config.min_chars, per_language=config.per_language,
            n_sentences=config.n_sentences, seed=config.seed, selection=config.selection, min_views=config.min_views,
            path=config.documents)
        client = make_client()
        steps = _Steps(client, config, on_progress)
        generated = steps.generate(selected)
        questions = steps.translate_and_check(generated)
        summary = BuildSummary(
            filters=counts, other_languages=outside, selection=config.selection, questions=len(questions),
            invalid={step: sum(1 for r in steps.invalid if (r.field or "").split(".")[0] == step)
                     for step in ("generate", "translate", "back-translate")},
            flagged_rows=sum(t.pivot.flagged for q in questions for t in q.translations.values()),
            calls=client.meter.calls, cached_calls=client.meter.cached_calls,
            cost_usd_this_run=round(client.meter.cost_usd, 6), cost_usd_total=round(steps.cost_usd, 6),
        )
        _write(run.path, questions, steps.invalid, summary)
    return BuildResult(questions=questions, invalid=steps.invalid, summary=summary, out=run.path)


class _Steps:
    """The model steps of one build, with the invalid outputs and the cost they gathered."""

    def __init__(self, client: StructuredClient, config: BuildConfig, on_progress: Progress | None):
        self.client = client
        self.config = config
        self.on_progress = on_progress
        self.invalid: list[InvalidRecord] = []
        self.cost_usd = 0.0
        """What every output cost to produce, cached ones included."""

    def generate(self, selected: list[SelectedDocument]) -> list[tuple[SelectedDocument, Texts]]:
        """(document, source texts) for every document whose question and answer are valid: one chat answer, or
        a base model's question, then its answer."""
        return self.client.per_form(chat=self._generate_by_chat, completion=self._generate_by_fields)(selected)

    def _generate_by_chat(self, selected: list[SelectedDocument]) -> list[tuple[SelectedDocument, Texts]]:
        """`generate` for a chat model: the question and answer in one answer."""
        prompts = [ChatPrompt(None, generation_prompt(s.document.lang, s.context)) for s in selected]
        outcomes = self._call(prompts, TextOutput(parse_question_answer), "generate",
                              [question_answer_parser(s.context) for s in selected])
        generated = []
        for chosen, outcome in zip(selected, outcomes, strict=True):
            if outcome.valid:
                generated.append((chosen, Texts(question=outcome.value.question, answer=outcome.value.answer,
                                                context=chosen.context)))
            else:
                self._record_invalid(chosen, "generate", outcome)
        return generated

    def _generate_by_fields(self, selected: list[SelectedDocument]) -> list[tuple[SelectedDocument, Texts]]:
        """`generate` for a base model: the question, then the answer to each valid question."""
        prompts = [question_completion(s.context) for s in selected]
        parsers = [question_parser(chosen.context) for chosen in selected]
        outcomes = self._call(prompts, GENERATED_FIELD, "generate question", parsers)
        asked = []
        for chosen, outcome in zip(selected, outcomes, strict=True):
            if outcome.valid:
                asked.append((chosen, outcome.value))
            else:
                self._record_invalid(chosen, "generate.question", outcome)
        prompts = [answer_completion(chosen.context, question) for chosen, question in asked]
        parsers = [answer_parser(chosen.context, question) for chosen, question in asked]
        outcomes = self._call(prompts, GENERATED_FIELD, "generate answer", parsers)
        generated = []
        for (chosen, question), outcome in zip(asked, outcomes, strict=True):
            if outcome.valid:
                generated.append((chosen, Texts(question=question, answer=outcome.value, context=chosen.context)))
            else:
                self._record_invalid(chosen, "generate.answer", outcome)
        return generated

    def translate_and_check(self, generated: list[tuple[SelectedDocument, Texts]]) -> list[BuiltQuestion]:
        """Translations (and the English pivot), then back-translations, then the checks."""
        forward: list[_Job] = []
        for chosen, source in generated:
            lang = chosen.document.lang
            targets = list(chosen.missing_in)
            if lang != "en" and "en" not in targets:
                targets.append("en")  # the English version the pivot check compares with
            forward += [_Job((chosen.document.id, "forward", t, f), lang, t, getattr(source, f))
                        for t in targets for f in FIELDS]
        done = self._translate(forward, "translate")
        back: list[_Job] = []
        for chosen, _ in generated:
            q_id, lang = chosen.document.id, chosen.document.lang
            for target in chosen.missing_in:
                for f in FIELDS:
                    text = done[(q_id, "forward", target, f)].value
                    if text is not None:
                        back.append(_Job((q_id, "back", target, f), target, lang if target == "en" else "en", text))
        done |= self._translate(back, "back-translate")
        by_id = {chosen.document.id: chosen for chosen, _ in generated}
        for (q_id, kind, lang, f), outcome in done.items():
            if not outcome.valid:
                step = "translate" if kind == "forward" else "back-translate"
                self._record_invalid(by_id[q_id], f"{step}.{lang}.{f}", outcome)
        return [_question(chosen, source, done, self.config) for chosen, source in generated]

    def _translate(self, jobs: list[_Job], step: str) -> dict[tuple[str, str, str, str], StructuredOutcome]:
        """Outcome per job key; one parser per output language, so the jobs go grouped by it."""
        results = {}
        for out_lang in dict.fromkeys(job.out_lang for job in jobs):
            group = [job for job in jobs if job.out_lang == out_lang]
            asks = [Ask(ChatPrompt(None, translation_prompt(job.in_lang, out_lang, job.text)),
                        translation_completion(job.in_lang, out_lang, job.text),
                        completion_parse=completion_translation_parser(job.in_lang, out_lang, job.text))
                    for job in group]
            reading = Reading(*[TextOutput(translation_parser(out_lang))] * 2)
            outcomes = self._ask(asks, reading, f"{step} -> {out_lang}")
            results |= {job.key: outcome for job, outcome in zip(group, outcomes, strict=True)}
        return results

    def _call(self, prompts: Sequence[Prompt], output: TextOutput, step: str,
              parsers: Sequence[TextParser] | None = None) -> list[StructuredOutcome]:
        """`client.call_many` in batches, with one parser per prompt where `parsers` are given (`_in_batches`)."""
        return self._in_batches(len(prompts), step, lambda start, end: self.client.call_many(
            prompts[start:end], output, parsers=parsers[start:end] if parsers is not None else None))

    def _ask(self, asks: Sequence[Ask], reading: Reading, step: str) -> list[StructuredOutcome]:
        """`client.ask_many` in batches (`_in_batches`)."""
        return self._in_batches(len(asks), step, lambda start, end: self.client.ask_many(asks[start:end], reading))

    def _in_batches(self, total: int, step: str,
                    ask: Callable[[int, int], list[StructuredOutcome]]) -> list[StructuredOutcome]:
        """The outcomes of `ask(start, end)` over `total` requests, `batch_size` at a time, reporting progress
        after each batch and adding their cost."""
        outcomes: list[StructuredOutcome] = []
        for start in range(0, total, self.config.batch_size):
            outcomes += ask(start, start + self.config.batch_size)
            if self.on_progress:
                self.on_progress(step, len(outcomes), total, self.client.meter)
        self.cost_usd += sum(outcome.cost_usd for outcome in outcomes)
        return outcomes

    def _record_invalid(self, chosen: SelectedDocument, step: str, outcome: StructuredOutcome) -> None:
        reason = f"{outcome.error} after {outcome.attempts} attempt(s); last output: {outcome.raw_text[:200]!r}"
        self.invalid.append(InvalidRecord(path=self.config.documents, line=chosen.line, field=step, reason=reason,
                                          item_id=chosen.document.id))


def _question(chosen: SelectedDocument, source: Texts, done: dict, config: BuildConfig) -> BuiltQuestion:
    """One BuiltQuestion from the outcomes in `done` (keyed as `_Job.key`)."""
    document = chosen.document

    def texts(kind: str, lang: str) -> Texts:
        outcomes = {f: done.get((document.id, kind, lang, f)) for f in FIELDS}
        return Texts(**{f: None if o is None else o.value for f, o in outcomes.items()})

    english = None if document.lang == "en" else texts("forward", "en")
    translations = {}
    for target in chosen.missing_in:
        reference = source if target == "en" or english is None else english
        pivot = pivot_check(document.lang if target == "en" else "en", texts("back", target), reference,
                            config.pivot_threshold)
        translations[target] = Translation(texts=texts("forward", target), pivot=pivot)
    return BuiltQuestion(q_id=document.id, original_lang=document.lang, title=document.title, url=document.url,
                         line=chosen.line, source=source, english=english, translations=translations)


def _write(out: Path, questions: list[BuiltQuestion], invalid: list[InvalidRecord], summary: BuildSummary) -> None:
    """The build's files; an existing review.csv that differs from this build's is kept, and an error."""
    sheet = out / SHEET_FILE
    fresh = out / f".{SHEET_FILE}.new"
    export_sheet(questions, fresh)
    if sheet.exists() and sheet.read_bytes() != fresh.read_bytes():
        fresh.unlink()
        raise CrossknowError(f"{sheet} differs from what this build writes (edited by a reviewer?): move it away "
                             f"and run again")
    fresh.replace(sheet)
    lines = [question.model_dump_json() + "\n" for question in questions]
    atomic_write(out / QUESTIONS_FILE, lambda handle: handle.writelines(lines))
    write_invalid(out / INVALID_FILE, invalid)
    atomic_write_json(out / SUMMARY_FILE, summary.model_dump())
