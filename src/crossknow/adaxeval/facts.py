"""Stage 'facts': multi-LLM fact detection and triple extraction (the paper's section 3.1.1, Appendix A.1).

Each detector answers {factuality, triple, reason} about a sentence; its confidence is P("yes") of
the factuality answer, read from the top log-probabilities where the backend gives them (else 1 or
0 from the answer). A sentence is kept when the summed confidence of the valid votes exceeds the
threshold (the paper: more than 2 of 3 detectors' worth) and at least `min_yes` detectors said yes
(the paper: two), and some yes vote carries a triple.

The final triple (`choose_triple`), among the yes votes with a triple, is the one that ranks first by:
1. grounding: how many of its subject and object occur in the sentence (ignoring case), since the
   cloze is written by blanking one of them;
2. the detector's confidence;
3. agreement: its mean character-bigram Jaccard similarity (subject and object) to the other
   candidates, so that the reading most detectors share wins;
4. the detector's position in --detector (first wins).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.records import DetectorVote, FactRecord, SentenceRecord, Triple
from crossknow.adaxeval.stages import StageRow, call_info, transport_failed
from crossknow.data.schemas import Record
from crossknow.generation.structured import StructuredClient

CONFIDENCE_FIELD = "factuality"


def _yes_needs_a_triple(schema: dict[str, Any]) -> None:
    """Rewrite FactAnswer's JSON schema as two alternatives, {"factuality": "yes", "triple": {...}} and
    {"factuality": "no", "triple": null}, so that a decoder constrained to it cannot write a yes
    without a triple (fields in the same order, so the confidence is still scored after the answer)."""
    properties, required = schema.pop("properties"), schema.pop("required")
    triple_ref = next(option for option in properties["triple"]["anyOf"] if "$ref" in option)

    def variant(answer: str, triple: dict[str, Any]) -> dict[str, Any]:
        fields = {
            "factuality": {**properties["factuality"], "enum": [answer]},
            "triple": {**triple, "description": properties["triple"].get("description", "")},
            "reason": properties["reason"],
        }
        return {"type": "object", "properties": fields, "required": required, "additionalProperties": False}

    schema.pop("additionalProperties", None)
    schema.pop("type", None)
    schema["anyOf"] = [variant("yes", triple_ref), variant("no", {"type": "null"})]


class FactAnswer(Record):
    """A detector's answer to the 'facts' prompt (Appendix A.1's three fields). A "yes" must carry a
    triple (its JSON schema and its validation both say so): a yes without content cannot make an item.
    A triple given with a "no" is ignored."""

    model_config = ConfigDict(json_schema_extra=_yes_needs_a_triple)

    factuality: Literal["yes", "no"] = Field(description="Whether the sentence states a domain fact.")
    triple: Triple | None = Field(description="The fact as subject, relation, object; null when factuality is no.")
    reason: str = Field(description="A brief explanation of the decision.")

    @model_validator(mode="after")
    def _triple_when_yes(self) -> FactAnswer:
        if self.factuality == "yes" and self.triple is None:
            raise ValueError("a 'yes' needs a triple (subject, relation, object), got null")
        return self


def default_threshold(n_detectors: int) -> float:
    """The paper's rule scaled to any number of detectors: more than 2/3 of the maximum sum."""
    return 2.0 * n_detectors / 3.0


def required_yes(min_yes: int, n_detectors: int) -> int:
    """Yes votes a sentence needs: `min_yes`, but never more than there are detectors."""
    return min(min_yes, n_detectors)


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

    def rank(i: int) -> tuple[int, float, float, int]:
        triple = votes[i].triple
        assert triple is not None
        grounding = (triple.subject.strip().lower() in text) + (triple.object.strip().lower() in text)
        others = [_jaccard(triple, votes[j].triple) for j in candidates if j != i]  # type: ignore[arg-type]
        agreement = sum(others) / len(others) if others else 0.0
        return (-grounding, -(votes[i].confidence or 0.0), -agreement, i)

    return min(candidates, key=rank)


def decide(
    sentence: SentenceRecord, votes: list[DetectorVote], threshold: float, min_yes: int
) -> StageRow[FactRecord]:
    """The stage row of one sentence from its detectors' votes."""
    valid = [vote for vote in votes if vote.factuality is not None]
    confidence = sum(vote.confidence or 0.0 for vote in valid)
    yes = sum(vote.factuality == "yes" for vote in valid)
    needed = required_yes(min_yes, len(votes))
    chosen = choose_triple(sentence.text, votes) if confidence > threshold and yes >= needed else None
    record = FactRecord(
        sentence=sentence, votes=votes, confidence_sum=round(confidence, 6), yes_votes=yes,
        triple=votes[chosen].triple if chosen is not None else None, chosen=chosen,
    )
    note = f"P(yes) sum {confidence:.3f} (> {threshold:.3f}?), {yes}/{len(votes)} yes"
    if not valid:
        errors = "; ".join(sorted({vote.call.error or "invalid" for vote in votes}))
        return StageRow(sentence.id, sentence.lang, "invalid", f"no valid vote: {errors}", record)
    if len(valid) < len(votes):
        note += f", {len(votes) - len(valid)} invalid vote(s)"
    if chosen is None and confidence > threshold and yes >= needed:
        note += ", no yes vote gave a triple"
    return StageRow(sentence.id, sentence.lang, "kept" if chosen is not None else "dropped", note, record)


def fact_rows(
    sentences: list[SentenceRecord],
    detectors: Sequence[tuple[str, StructuredClient]],
    prompts: PromptTable,
    threshold: float,
    min_yes: int,
) -> list[StageRow[FactRecord] | None]:
    """Ask every detector about every sentence of the chunk; one row per sentence (None when some
    detector's request failed in transport, to be retried by a later run)."""
    chat = [prompts.render("facts", s.lang, sentence=s.text) for s in sentences]
    per_detector = [
        client.call_many(chat, FactAnswer, confidence_field=CONFIDENCE_FIELD) for _, client in detectors
    ]
    rows: list[StageRow[FactRecord] | None] = []
    for k, sentence in enumerate(sentences):
        outcomes = [outcomes_[k] for outcomes_ in per_detector]
        if any(transport_failed(outcome) for outcome in outcomes):
            rows.append(None)
            continue
        votes = []
        for (spec, _), outcome in zip(detectors, outcomes, strict=True):
            answer: FactAnswer | None = outcome.value
            votes.append(
                DetectorVote(
                    detector=spec,
                    factuality=answer.factuality if answer else None,
                    confidence=outcome.yes_probability if answer else None,
                    triple=answer.triple if answer and answer.factuality == "yes" else None,
                    reason=answer.reason if answer else None,
                    call=call_info(outcome, spec),
                )
            )
        rows.append(decide(sentence, votes, threshold, min_yes))
    return rows
