"""Stage 'ner': keep sentences with at least MIN_ENTITIES entities; NER is a backend chosen per language.

`heuristic` (the default, crossknow's: no model, `ner_heuristic`), `spacy:MODEL` (the paper's scispaCy for
English), `hf:DIR` (a token-classification model, the form of the paper's Japanese NER: `ner_hf`) or `llm:SPEC`
(crossknow's: a generator lists the entities, as JSON from a chat model or one `entity_line` from a base model).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Protocol

from pydantic import Field

from crossknow.adaxeval.ner_found import Found
from crossknow.adaxeval.ner_heuristic import distinct_entities, heuristic_entities
from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.records import EntityRecord, SentenceRecord
from crossknow.adaxeval.stages import StageRow, ask_fields, call_info, first_line, transport_failed
from crossknow.data.schemas import Record
from crossknow.errors import CrossknowError
from crossknow.generation.ask import TextParser
from crossknow.generation.structured import StructuredClient

MIN_ENTITIES = 2
"""The paper keeps sentences with at least two entities."""
NER_TASKS = ("ner", "ner_fields")
"""The prompts of an llm: backend: the chat form and the completion form."""
SEPARATORS = re.compile(r"[;；]")
"""What separates the entities of a completion answer (`ner_fields`): a semicolon, ASCII or full-width."""


class EntityList(Record):
    """The LLM's answer to the 'ner' prompt."""

    entities: list[str] = Field(description="Entities as written in the sentence.")


class NerBackend(Protocol):
    """Finds entities in sentences of one language."""

    spec: str

    def find(self, sentences: Sequence[SentenceRecord]) -> list[Found]:
        """One result per sentence, in order."""
        ...


class HeuristicNer:
    """The default backend (see ner_heuristic)."""

    spec = "heuristic"

    def find(self, sentences: Sequence[SentenceRecord]) -> list[Found]:
        """Entities by the language's heuristics."""
        return [Found(heuristic_entities(s.text, s.lang)) for s in sentences]


class SpacyNer:
    """A spaCy pipeline installed by the user, e.g. scispaCy's en_ner_bionlp13cg_md."""

    def __init__(self, model: str):
        self.spec = f"spacy:{model}"
        try:
            import spacy
        except ImportError as error:
            raise CrossknowError(
                f"NER backend {self.spec!r} needs spaCy: pip install spacy (and scispacy for biomedical models)"
            ) from error
        try:
            self._nlp = spacy.load(model)
        except OSError as error:
            raise CrossknowError(
                f"spaCy model {model!r} is not installed; install its package (for scispaCy models see "
                f"https://allenai.github.io/scispacy/) or use --ner heuristic: {error}"
            ) from error

    def find(self, sentences: Sequence[SentenceRecord]) -> list[Found]:
        """The pipeline's entities (distinct, ignoring case)."""
        results = []
        for doc in self._nlp.pipe([s.text for s in sentences]):
            results.append(Found(distinct_entities([ent.text for ent in doc.ents])))
        return results


class LlmNer:
    """A generator lists the entities; those not found in the sentence are dropped."""

    def __init__(self, spec: str, client: StructuredClient, prompts: PromptTable):
        self.spec = f"llm:{spec}"
        self.model = spec
        self.client = client
        self.prompts = prompts

    def find(self, sentences: Sequence[SentenceRecord]) -> list[Found]:
        """One LLM call per sentence (retries aside), in the form the model takes (see the module docstring)."""
        return self.client.per_form(chat=self._find_chat, completion=self._find_completion)(sentences)

    def _find_chat(self, sentences: Sequence[SentenceRecord]) -> list[Found]:
        """`find` for a chat model: the entities as a JSON list."""
        prompts = [self.prompts.render("ner", s.lang, sentence=s.text) for s in sentences]
        outcomes = self.client.call_many(prompts, EntityList)
        results = []
        for sentence, outcome in zip(sentences, outcomes, strict=True):
            info = call_info(outcome, self.model)
            if not outcome.valid:
                results.append(Found(None, info, retry=transport_failed(outcome)))
                continue
            text = sentence.text.lower()
            present = [e.strip() for e in outcome.value.entities if e.strip() and e.strip().lower() in text]
            results.append(Found(distinct_entities(present), info))
        return results

    def _find_completion(self, sentences: Sequence[SentenceRecord]) -> list[Found]:
        """The base-model form: one line of entities per sentence, checked by `entity_line`."""
        prompts = [self.prompts.render_completion("ner_fields", s.lang, sentence=s.text) for s in sentences]
        rounds = ask_fields(self.client, self.model, prompts, [entity_line(s.text) for s in sentences])
        results = []
        for result in rounds:
            if result.transport_failed:
                results.append(Found(None, retry=True))
            else:
                results.append(Found(result.value, result.merged_call()))
        return results


def entity_line(sentence: str) -> TextParser:
    """The parser of a completion NER answer: its first line split at semicolons, the entities that occur in
    `sentence` (case folded) kept, distinct; (None, why) when the line is empty or none of them occurs there."""
    text = sentence.lower()

    def parse(output: str) -> tuple[list[str] | None, str | None]:
        listed = [part.strip() for part in SEPARATORS.split(first_line(output)) if part.strip()]
        if not listed:
            return None, "invalid_output: no entity listed"
        present = [entity for entity in listed if entity.lower() in text]
        if not present:
            return None, f"ungrounded_answer: no listed entity occurs in the sentence: {'; '.join(listed)[:80]!r}"
        return distinct_entities(present), None

    return parse


def check_ner_spec(spec: str) -> None:
    """Fail now on a spec no NER backend takes."""
    kind, _, rest = spec.partition(":")
    if spec != "heuristic" and not (kind in ("spacy", "hf", "llm") and rest):
        raise CrossknowError(
            f"unknown NER backend {spec!r}; use heuristic, spacy:MODEL, hf:DIRECTORY or llm:GENERATOR_SPEC"
        )


def make_ner(spec: str, client_for: Callable[[str], StructuredClient], prompts: PromptTable) -> NerBackend:
    """The backend `spec` names; `client_for(generator_spec)` builds the client of an llm: backend."""
    check_ner_spec(spec)
    kind, _, rest = spec.partition(":")
    if spec == "heuristic":
        return HeuristicNer()
    if kind == "spacy":
        return SpacyNer(rest)
    if kind == "hf":
        from crossknow.adaxeval.ner_hf import HfNer

        return HfNer(rest)
    return LlmNer(rest, client_for(rest), prompts)


def ner_rows(backend: NerBackend, sentences: list[SentenceRecord]) -> list[StageRow[EntityRecord] | None]:
    """Stage rows for a chunk of sentences of one language: kept with >= MIN_ENTITIES entities."""
    rows: list[StageRow[EntityRecord] | None] = []
    for sentence, found in zip(sentences, backend.find(sentences), strict=True):
        if found.retry:
            rows.append(None)
            continue
        record = EntityRecord(sentence=sentence, entities=found.entities or [], ner=backend.spec, call=found.call)
        if found.entities is None:
            status, note = "invalid", (found.call.error if found.call else None) or "invalid output"
        else:
            count = len(found.entities)
            status, note = ("kept" if count >= MIN_ENTITIES else "dropped"), f"{count} entities"
        rows.append(StageRow(sentence.id, sentence.lang, status, note, record))
    return rows
