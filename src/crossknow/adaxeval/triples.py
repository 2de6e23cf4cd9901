"""Stage 'triples': the writer regenerates each factual sentence's triple before the cloze is written (the short
paper's section 2.1; the full paper names no such step). The detector's triple is the reference; the cloze, its
answer and the quality judge use the regenerated one, and both are saved.

crossknow's choices: the writer regenerates one triple per sentence as JSON, without reasoning; its object must
occur in the sentence, not inside a word (`object_problem`), else it is asked again; a base model is asked nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from crossknow.adaxeval.checks import occurs
from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.records import FactRecord, RejectedTriple, Triple, TripleRecord
from crossknow.adaxeval.stages import StageRow, ask_in_rounds, no_call, normalise
from crossknow.generation.structured import StructuredClient


class TripleAnswer(Triple):
    """The writer's answer to the 'triple' prompt: subject, relation and object, none of them blank."""


def object_problem(sentence: str, triple: Triple) -> str | None:
    """Why `triple` cannot be blanked in `sentence`: its object does not occur in it (ignoring case, runs of
    spaces and a final period; see `occurs`); None when it can."""
    if occurs(normalise(triple.object), normalise(sentence)):
        return None
    return f"object_not_in_sentence: the object {triple.object!r} does not occur in the sentence (the cloze blanks it)"


def _reference(fact: FactRecord) -> Triple:
    if fact.triple is None:
        raise AssertionError(f"fact {fact.sentence.id} was kept without a triple")
    return fact.triple


def triple_rows(
    facts: Sequence[FactRecord], writer: tuple[str, StructuredClient], prompts: PromptTable
) -> list[StageRow[TripleRecord] | None]:
    """One row per fact: kept with the regenerated triple, invalid when the writer's output stayed malformed
    or its object never occurred in the sentence, None when the request failed in transport."""
    spec, client = writer
    return client.per_form(chat=lambda: _chat_triples(facts, spec, client, prompts),
                           completion=lambda: [_detector_triple(fact, spec) for fact in facts])()


def _chat_triples(
    facts: Sequence[FactRecord], spec: str, client: StructuredClient, prompts: PromptTable
) -> list[StageRow[TripleRecord] | None]:
    """`triple_rows` for a chat model: the triple written again as JSON, reviewed in rounds."""
    first = []
    for fact in facts:
        reference = _reference(fact)
        first.append(
            prompts.render(
                "triple", fact.sentence.lang, sentence=fact.sentence.text,
                subject=reference.subject, relation=reference.relation, object=reference.object,
            )
        )
    given: list[list[Triple]] = [[] for _ in facts]

    def review(i: int, answer: TripleAnswer, round_: int) -> str | None:
        given[i].append(_plain(answer))
        return object_problem(facts[i].sentence.text, answer)

    def again(i: int, answer: TripleAnswer, problem: str) -> str:
        return prompts.render("triple_again", facts[i].sentence.lang, object=answer.object).user

    rows: list[StageRow[TripleRecord] | None] = []
    outcomes = ask_in_rounds(client, spec, first, TripleAnswer, review, again)
    for i, (fact, rounds) in enumerate(zip(facts, outcomes, strict=True)):
        if rounds.transport_failed:
            rows.append(None)
            continue
        answer: TripleAnswer | None = rounds.value
        rejected = [
            RejectedTriple(triple=given[i][k], reason=problem, round=k) for k, problem in enumerate(rounds.problems)
        ]
        record = TripleRecord(
            fact=fact, triple=_plain(answer) if answer else None, rejected=rejected, call=rounds.merged_call()
        )
        sentence = fact.sentence
        if record.triple is None:
            rows.append(StageRow(sentence.id, sentence.lang, "invalid", rounds.error or "invalid output", record))
            continue
        note = "same as the detector's" if record.triple == fact.triple else "differs from the detector's"
        if rejected:
            note += f", {len(rejected)} triple(s) rejected"
        rows.append(StageRow(sentence.id, sentence.lang, "kept", note, record))
    return rows


def _detector_triple(fact: FactRecord, spec: str) -> StageRow[TripleRecord]:
    """The completion path: the detector's triple, checked, in place of a regenerated one."""
    triple, sentence = _plain(_reference(fact)), fact.sentence
    problem = object_problem(sentence.text, triple)
    record = TripleRecord(fact=fact, triple=None if problem else triple, call=no_call(spec, problem, triple.object))
    if problem is not None:
        return StageRow(sentence.id, sentence.lang, "invalid", problem, record)
    return StageRow(sentence.id, sentence.lang, "kept", "the detector's triple (completion writer)", record)


def _plain(answer: Triple) -> Triple:
    """The answer as a plain Triple, its elements stripped."""
    return Triple(subject=answer.subject.strip(), relation=answer.relation.strip(), object=answer.object.strip())
