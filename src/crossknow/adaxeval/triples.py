"""Stage 'triples': the writer regenerates each factual sentence's triple before the cloze is written.

The short paper, section 2.1 ("Queries Crafting"):

    "Given the factual sentence and referenced triple, we first prompt the LLM to generate reliable
    domain factual triples (e.g., ⟨blood sugar level, can be controlled by, insulin⟩). While subjects
    and objects are preferably named entities, descriptive phrases are acceptable."

and its fact detection extracts triples "as the reference for question crafting". The full paper
names no such step: its section 3.1.2 writes the cloze "for each recognized fact", section 3.2 keeps
the detectors' "generated triples as the final sentence set" and then uses GPT-4.1 "to generate cloze
queries, paraphrases, and generate three distractors", and Appendix A.1(3) gives that model "the
extracted triples and their corresponding context sentences as input". crossknow follows the short
paper: the detector's triple is the reference, and the cloze, its answer and the quality judgement use
the regenerated one. Both are saved (`TripleRecord.fact.triple` and `TripleRecord.triple`; the dataset's
`metadata.detector_triple` and `metadata.triple`).

What the paper does not say, and is therefore crossknow's choice:
- which model regenerates: the writer (--writer), the "advanced LLM" that crafts the queries (the
  paper's GPT-4.1 for queries and distractors, Appendix A.1(3));
- one triple per sentence (the paper writes "triples"; its Table 1 has as many cloze queries as
  factual sentences, so each sentence makes one item);
- the answer: a JSON object with the fields subject, relation and object, no reasoning field (the
  paper describes no chain of thought for this step); the prompt is task 'triple' of the prompt files;
- the check, by code: every element non-empty after stripping (the schema: a blank one is malformed
  output, retried by the client), and the object must occur in the sentence, ignoring case, runs of
  spaces and a final period (`object_problem`). The cloze replaces the object with [BLANK] in a text
  that "closely matches the original sentence" (section 2.1), so an object the sentence does not
  contain cannot be blanked. In Latin script the object must not begin or end inside a word or
  number ("sulin" is not found in "Insulin"): blanking part of a word gives a broken cloze. The
  subject is not checked: only the object is blanked, and the paper accepts descriptive phrases. A
  triple that fails the check is rejected and the writer asked again with a note (task
  'triple_again'), up to --max-attempts rounds, through `stages.ask_in_rounds`;
- with a writer whose `prompt_format` is 'completion' (a base model, crossknow's design), nothing
  is asked: the detector's triple is taken as it is (structure from the fact stage, not from a model
  asked for JSON), checked the same way; its row records no call (`attempts` 0);
- a sentence whose output stayed malformed or rejected is 'invalid': its row keeps the reason, the
  last raw output and every rejected triple, it is listed in invalid.jsonl and counted as invalid in
  the stage table, and it makes no item.
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
    if client.prompt_format == "completion":
        return [_detector_triple(fact, spec) for fact in facts]
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
