"""Stage 'facts': multi-LLM fact detection and triple extraction (the paper's section 3.1.1, Appendix A.1).

Each detector answers A.1's fields (`factuality`, `triple`, `reasoning`) in the order --fact-order names (A.1's by
default); the confidence is P("yes") of the factuality answer. A sentence is kept by section 3.2's summed
confidence ('sum', the default), A.1's yes votes ('votes') or both (crossknow's); the final triple is the most
confident yes vote's, ties broken by crossknow's heuristic (`choose_triple`). Base models: `facts_completion`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from crossknow.adaxeval.facts_completion import completion_votes
from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.records import (
    DetectorVote,
    DropReason,
    FactOrder,
    FactRecord,
    FactRule,
    SentenceRecord,
    Triple,
)
from crossknow.adaxeval.stages import StageRow, call_info, transport_failed
from crossknow.data.schemas import Record
from crossknow.generation.structured import StructuredClient

CONFIDENCE_FIELD = "factuality"


def _yes_needs_a_triple(schema: dict[str, Any]) -> None:
    """Rewrite a fact answer's JSON schema as two alternatives, {"factuality": "yes", "triple": {...}, ...} and
    {"factuality": "no", "triple": null, ...}, so that a decoder constrained to it cannot write a yes without a
    triple. The fields keep the model's order, which decides whether the confidence is read before or after the
    reasoning."""
    properties, required = schema.pop("properties"), schema.pop("required")
    triple_ref = next(option for option in properties["triple"]["anyOf"] if "$ref" in option)

    def variant(answer: str, triple: dict[str, Any]) -> dict[str, Any]:
        changed = {
            "factuality": {**properties["factuality"], "enum": [answer]},
            "triple": {**triple, "description": properties["triple"].get("description", "")},
        }
        fields = {name: changed.get(name, value) for name, value in properties.items()}
        return {"type": "object", "properties": fields, "required": required, "additionalProperties": False}

    schema.pop("additionalProperties", None)
    schema.pop("type", None)
    schema["anyOf"] = [variant("yes", triple_ref), variant("no", {"type": "null"})]


FACTUALITY = "Whether the sentence states a domain fact."
TRIPLE = "The fact as subject, relation, object; null when factuality is no."


class _FactFields(Record):
    """What both field orders share: a "yes" must carry a triple (its JSON schema and its validation both say so),
    since a yes without content cannot make an item; a triple given with a "no" is ignored."""

    model_config = ConfigDict(json_schema_extra=_yes_needs_a_triple)

    @model_validator(mode="after")
    def _triple_when_yes(self) -> _FactFields:
        if self.factuality == "yes" and self.triple is None:  # type: ignore[attr-defined]
            raise ValueError("a 'yes' needs a triple (subject, relation, object), got null")
        return self


class FactAnswer(_FactFields):
    """A detector's answer in Appendix A.1's order (the default): factuality, triple, then the reason."""

    factuality: Literal["yes", "no"] = Field(description=FACTUALITY)
    triple: Triple | None = Field(description=TRIPLE)
    reasoning: str = Field(
        description="A brief explanation of why the sentence was or wasn't considered factual, by the criteria "
        "(Appendix A.1's reason), written after the answer."
    )


class FactAnswerReasoningFirst(_FactFields):
    """A detector's answer with the reasoning first (crossknow's option): reasoning, factuality, triple."""

    reasoning: str = Field(description="Step-by-step reasoning about the criteria, written before the answer.")
    factuality: Literal["yes", "no"] = Field(description=FACTUALITY)
    triple: Triple | None = Field(description=TRIPLE)


ANSWERS: dict[str, tuple[str, type[_FactFields]]] = {
    "paper": ("facts", FactAnswer),
    "reasoning_first": ("facts_reasoning_first", FactAnswerReasoningFirst),
}
"""--fact-order -> (prompt task, answer schema)."""


def default_threshold(n_detectors: int) -> float:
    """The paper's sum rule scaled to any number of detectors: more than 2/3 of the maximum sum."""
    return 2.0 * n_detectors / 3.0


@dataclass(frozen=True)
class KeepRule:
    """Which sentences fact detection keeps (see the module docstring)."""

    name: FactRule
    """'sum', 'votes' or 'both'."""
    threshold: float
    """The sum rule: summed P(yes) must exceed this."""
    min_yes: int
    """The votes rule: yes votes needed (capped at the number of detectors by `needed`)."""

    def needed(self, n_detectors: int) -> int:
        """Yes votes a sentence needs: `min_yes`, but never more than there are detectors."""
        return min(self.min_yes, n_detectors)

    def failed(self, passes_sum: bool, passes_votes: bool) -> list[DropReason]:
        """The rules this setting applies that a sentence failed (empty: it is kept)."""
        applied: list[DropReason] = ["sum", "votes"] if self.name == "both" else [self.name]
        passed = {"sum": passes_sum, "votes": passes_votes}
        return [rule for rule in applied if not passed[rule]]


def _bigrams(text: str) -> set[str]:
    text = " ".join(text.lower().split())
    return {text[i : i + 2] for i in range(len(text) - 1)} or {text}


def _jaccard(a: Triple, b: Triple) -> float:
    x, y = _bigrams(f"{a.subject} {a.object}"), _bigrams(f"{b.subject} {b.object}")
    return len(x & y) / len(x | y) if x | y else 0.0


def choose_triple(sentence: str, votes: Sequence[DetectorVote]) -> int | None:
    """Index in `votes` of the final triple by the module's rule; None when no yes vote has one."""
    candidates = [i for i, vote in enumerate(votes) if vote.factuality == "yes" and vote.triple is not None]
    if not candidates:
        return None
    text = sentence.lower()

    def rank(i: int) -> tuple[float, int, float, int]:
        triple = votes[i].triple
        assert triple is not None
        grounding = (triple.subject.strip().lower() in text) + (triple.object.strip().lower() in text)
        others = [_jaccard(triple, votes[j].triple) for j in candidates if j != i]  # type: ignore[arg-type]
        agreement = sum(others) / len(others) if others else 0.0
        return (-(votes[i].confidence or 0.0), -grounding, -agreement, i)

    return min(candidates, key=rank)


def decide(sentence: SentenceRecord, votes: list[DetectorVote], rule: KeepRule) -> StageRow[FactRecord]:
    """The stage row of one sentence from its detectors' votes."""
    valid = [vote for vote in votes if vote.factuality is not None]
    confidence = sum(vote.confidence or 0.0 for vote in valid)
    yes = sum(vote.factuality == "yes" for vote in valid)
    needed = rule.needed(len(votes))
    passes_sum, passes_votes = confidence > rule.threshold, yes >= needed
    failed = rule.failed(passes_sum, passes_votes)
    chosen = None if failed else choose_triple(sentence.text, votes)
    dropped_by: list[DropReason] = [] if not valid else failed or ([] if chosen is not None else ["no_triple"])
    record = FactRecord(
        sentence=sentence, votes=votes, confidence_sum=round(confidence, 6), yes_votes=yes,
        passes_sum=passes_sum, passes_votes=passes_votes, dropped_by=dropped_by,
        triple=votes[chosen].triple if chosen is not None else None, chosen=chosen,
    )
    note = (
        f"P(yes) sum {confidence:.3f} (> {rule.threshold:.3f}: {'yes' if passes_sum else 'no'}), "
        f"{yes}/{len(votes)} yes (>= {needed}: {'yes' if passes_votes else 'no'}), rule {rule.name}"
    )
    if not valid:
        errors = "; ".join(sorted({vote.call.error or "invalid" for vote in votes}))
        return StageRow(sentence.id, sentence.lang, "invalid", f"no valid vote: {errors}", record)
    if len(valid) < len(votes):
        note += f", {len(votes) - len(valid)} invalid vote(s)"
    if dropped_by:
        note += f"; dropped by {' and '.join(dropped_by)}"
    return StageRow(sentence.id, sentence.lang, "dropped" if dropped_by else "kept", note, record)


def fact_rows(
    sentences: list[SentenceRecord],
    detectors: Sequence[tuple[str, StructuredClient]],
    prompts: PromptTable,
    rule: KeepRule,
    order: FactOrder = "paper",
    calibrate: bool = True,
) -> list[StageRow[FactRecord] | None]:
    """Ask every detector about every sentence of the chunk, in the form its model takes: a chat detector answers
    the fields as JSON in `order`, a base-model detector field by field (`crossknow.adaxeval.facts_completion`, its
    exact P(yes) calibrated unless `calibrate` is False); one row per sentence (None when some detector's request
    failed in transport, to be retried by a later run)."""
    chat, completion = partial(_chat_votes, order=order), partial(completion_votes, calibrate=calibrate)
    per_detector = [client.per_form(chat=chat, completion=completion)(sentences, spec, client, prompts)
                    for spec, client in detectors]
    rows: list[StageRow[FactRecord] | None] = []
    for k, sentence in enumerate(sentences):
        votes = [votes_[k] for votes_ in per_detector]
        rows.append(None if any(vote is None for vote in votes) else decide(sentence, votes, rule))  # type: ignore[arg-type]
    return rows


def _chat_votes(
    sentences: list[SentenceRecord], spec: str, client: StructuredClient, prompts: PromptTable, order: FactOrder
) -> list[DetectorVote | None]:
    """One vote per sentence from a chat detector: Appendix A.1's fields as one JSON answer in `order`, P(yes) of
    its factuality value; None where the request failed in transport."""
    task, schema = ANSWERS[order]
    chat = [prompts.render(task, s.lang, sentence=s.text) for s in sentences]
    votes: list[DetectorVote | None] = []
    for outcome in client.call_many(chat, schema, confidence_field=CONFIDENCE_FIELD):
        if transport_failed(outcome):
            votes.append(None)
            continue
        answer: FactAnswer | FactAnswerReasoningFirst | None = outcome.value
        votes.append(DetectorVote(
            detector=spec,
            factuality=answer.factuality if answer else None,
            confidence=outcome.yes_probability if answer else None,
            raw_yes_probability=outcome.yes_probability if answer else None,  # the chat path never calibrates
            triple=answer.triple if answer and answer.factuality == "yes" else None,
            reasoning=answer.reasoning if answer else None,
            call=call_info(outcome, spec),
        ))
    return votes
