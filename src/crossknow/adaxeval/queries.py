"""Question crafting (the paper's section 3.1.2): stage 'cloze', then stage 'paraphrase', one call each.

The cloze blanks the object of the writer's regenerated triple (`triples.py`) and must no longer hold it; the
question is written from the cloze and its answer (crossknow's choice) and must not give the answer away; both
are checked by `crossknow.adaxeval.checks`, and a rejected one is asked for again. On the completion path
(crossknow's design for base models) code makes the cloze (`checks.blank_object`) and the question is one line.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from pydantic import Field, model_validator

from crossknow.adaxeval.checks import blank_object, duplicate_problem, echo_problem, grounding_problem
from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.records import ClozeRecord, QueryRecord, RejectedAnswer, Triple, TripleRecord
from crossknow.adaxeval.stages import (
    Rounds,
    StageRow,
    ask_fields,
    ask_in_rounds,
    contains,
    first_line,
    no_call,
    normalise,
)
from crossknow.data.schemas import BLANK, Record
from crossknow.generation.ask import TextParser
from crossknow.generation.structured import StructuredClient

QUESTION_ENDS = ("?", "？", "か", "か。")
"""How a question written on the completion path must end."""

REASONING = "Brief step-by-step reasoning, written before the answer."


class ClozeAnswer(Record):
    """The writer's answer to the 'cloze' prompt: reasoning first, then the cloze."""

    reasoning: str = Field(description=REASONING)
    cloze: str = Field(description="The sentence with the object of the fact replaced by exactly one [BLANK].")

    @model_validator(mode="after")
    def _check(self) -> ClozeAnswer:
        if self.cloze.count(BLANK) != 1:
            raise ValueError(f"the cloze must hold exactly one {BLANK}, found {self.cloze.count(BLANK)}")
        if not self.cloze.replace(BLANK, "").strip():
            raise ValueError("the cloze holds nothing but the blank")
        return self


class ParaphraseAnswer(Record):
    """The writer's answer to the 'paraphrase' prompt: reasoning first, then the question."""

    reasoning: str = Field(description=REASONING)
    question: str = Field(description="A question asking for what [BLANK] stands for, in other words.")

    @model_validator(mode="after")
    def _check(self) -> ParaphraseAnswer:
        if BLANK in self.question:
            raise ValueError(f"the question must not hold {BLANK}")
        if not self.question.strip():
            raise ValueError("the question must not be empty")
        return self


def cloze_similarity(cloze: str, answer: str, sentence: str) -> float:
    """difflib ratio of the cloze with `answer` filled in to the original sentence, rounded to 4 places."""
    filled = cloze.replace(BLANK, answer.strip())
    return round(difflib.SequenceMatcher(None, filled, sentence, autojunk=False).ratio(), 4)


def blank_problem(cloze: str, obj: str) -> str | None:
    """Why `cloze` does not blank the object `obj` (it still contains it); None when it may."""
    if contains(cloze.replace(BLANK, " "), obj):
        return f"object_not_blanked: the object {obj!r} is still in the cloze: [BLANK] must replace the object"
    return None


def cloze_problem(cloze: str, obj: str, sentence: str, template: str, taken: dict[str, str], key: str) -> str | None:
    """Why a cloze of fact `key` is rejected (object not blanked, prompt echo, not grounded in `sentence`, kept for
    another fact), as 'code: why'; None when it is accepted."""
    return (blank_problem(cloze, obj) or echo_problem(cloze, template, "cloze")
            or grounding_problem(cloze, obj, sentence) or duplicate_problem(cloze, taken, key, "cloze"))


def question_problem(question: str, answer: str, template: str, taken: dict[str, str], key: str) -> str | None:
    """Why a question of fact `key` is rejected (it gives the answer away, echoes the prompt, was kept for another
    fact), as 'code: why'; None when it is accepted."""
    if contains(question, answer):
        return "answer_in_question: the question gives the answer away (it contains it)"
    return echo_problem(question, template, "question") or duplicate_problem(question, taken, key, "question")


def _rejected(rounds: Rounds, given: Sequence[str]) -> list[RejectedAnswer]:
    """The rejected answers, in round order: `given` holds the text of every reviewed answer, and the
    rounds before an accepted one (or all of them) are the rejected ones."""
    return [RejectedAnswer(text=given[k], reason=problem, round=k) for k, problem in enumerate(rounds.problems)]


def _triple(regenerated: TripleRecord) -> Triple:
    if regenerated.triple is None:
        raise AssertionError(f"fact {regenerated.fact.sentence.id} was kept without a regenerated triple")
    return regenerated.triple


def cloze_rows(
    regenerated: Sequence[TripleRecord], writer: tuple[str, StructuredClient], prompts: PromptTable,
    taken: dict[str, str] | None = None,
) -> list[StageRow[ClozeRecord] | None]:
    """One row per fact with its regenerated triple: kept with its cloze, invalid when the writer's output
    stayed malformed or rejected (see the module docstring), None when the request failed in transport.
    `taken` (updated): normalised clozes already kept -> their sentence id."""
    spec, client = writer
    taken = {} if taken is None else taken
    return client.per_form(chat=lambda: _chat_clozes(regenerated, spec, client, prompts, taken),
                           completion=lambda: [_code_cloze(record, spec, prompts, taken) for record in regenerated])()


def _chat_clozes(
    regenerated: Sequence[TripleRecord], spec: str, client: StructuredClient, prompts: PromptTable,
    taken: dict[str, str],
) -> list[StageRow[ClozeRecord] | None]:
    """`cloze_rows` for a chat model: the cloze written as JSON, reviewed in rounds."""
    triples = [_triple(record) for record in regenerated]
    facts = [record.fact for record in regenerated]
    first = [
        prompts.render(
            "cloze", fact.sentence.lang, sentence=fact.sentence.text,
            subject=triple.subject, relation=triple.relation, object=triple.object,
        )
        for fact, triple in zip(facts, triples, strict=True)
    ]
    given: list[list[str]] = [[] for _ in facts]

    def review(i: int, answer: ClozeAnswer, round_: int) -> str | None:
        given[i].append(answer.cloze)
        sentence = facts[i].sentence
        problem = cloze_problem(answer.cloze, triples[i].object, sentence.text,
                                prompts.template("cloze", sentence.lang), taken, sentence.id)
        if problem is None:
            taken[normalise(answer.cloze)] = sentence.id
        return problem

    def again(i: int, answer: ClozeAnswer, problem: str) -> str:
        lang = facts[i].sentence.lang
        return prompts.render("cloze_again", lang, object=triples[i].object, cloze=answer.cloze).user

    rows: list[StageRow[ClozeRecord] | None] = []
    for i, (fact, rounds) in enumerate(zip(facts, ask_in_rounds(client, spec, first, ClozeAnswer, review, again),
                                           strict=True)):
        if rounds.transport_failed:
            rows.append(None)
            continue
        answer: ClozeAnswer | None = rounds.value
        obj = triples[i].object.strip()
        record = ClozeRecord(
            triple_record=regenerated[i], reasoning=answer.reasoning if answer else "",
            cloze=answer.cloze.strip() if answer else "",
            answer=obj, cloze_similarity=cloze_similarity(answer.cloze, obj, fact.sentence.text) if answer else 0.0,
            rejected=_rejected(rounds, given[i]), call=rounds.merged_call(),
        )
        sentence = fact.sentence
        if answer is None:
            rows.append(StageRow(sentence.id, sentence.lang, "invalid", rounds.error or "invalid output", record))
            continue
        note = f"cloze similarity {record.cloze_similarity}"
        if record.rejected:
            note += f", {len(record.rejected)} cloze(s) rejected"
        rows.append(StageRow(sentence.id, sentence.lang, "kept", note, record))
    return rows


def _code_cloze(record: TripleRecord, spec: str, prompts: PromptTable, taken: dict[str, str]) -> StageRow[ClozeRecord]:
    """The completion path's cloze of one fact, made by code (see the module docstring)."""
    sentence, obj = record.fact.sentence, _triple(record).object.strip()
    cloze = blank_object(sentence.text, obj)
    problem = (f"object_not_in_sentence: the object {obj!r} was not found in the sentence" if cloze is None else
               cloze_problem(cloze, obj, sentence.text, "", taken, sentence.id))
    call = no_call(spec, problem, cloze)
    result = ClozeRecord(
        triple_record=record, reasoning="", cloze=cloze or "", answer=obj,
        cloze_similarity=cloze_similarity(cloze, obj, sentence.text) if cloze else 0.0,
        rejected=[RejectedAnswer(text=cloze, reason=problem, round=0)] if cloze and problem else [], call=call,
    )
    if problem is not None:
        return StageRow(sentence.id, sentence.lang, "invalid", problem, result)
    taken[normalise(cloze)] = sentence.id  # type: ignore[arg-type]
    return StageRow(sentence.id, sentence.lang, "kept", "cloze made by code (completion writer)", result)


def paraphrase_rows(
    clozes: Sequence[ClozeRecord], writer: tuple[str, StructuredClient], prompts: PromptTable,
    taken: dict[str, str] | None = None,
) -> list[StageRow[QueryRecord] | None]:
    """One row per cloze: kept with its paraphrased question, invalid when the writer's output stayed
    malformed or rejected (see the module docstring), None when the request failed in transport. `taken`
    (updated): normalised questions already kept -> their sentence id."""
    spec, client = writer
    taken = {} if taken is None else taken
    asked = client.per_form(chat=_chat_questions, completion=_ask_questions)
    return _rows(clozes, asked(clozes, spec, client, prompts, taken))


def _chat_questions(
    clozes: Sequence[ClozeRecord], spec: str, client: StructuredClient, prompts: PromptTable, taken: dict[str, str]
) -> list[Rounds]:
    """The chat path's questions: the paraphrase as JSON, reviewed in rounds."""
    first = [prompts.render("paraphrase", c.fact.sentence.lang, cloze=c.cloze, answer=c.answer) for c in clozes]
    given: list[list[str]] = [[] for _ in clozes]

    def review(i: int, answer: ParaphraseAnswer, round_: int) -> str | None:
        given[i].append(answer.question)
        sentence = clozes[i].fact.sentence
        problem = question_problem(answer.question, clozes[i].answer, prompts.template("paraphrase", sentence.lang),
                                   taken, sentence.id)
        if problem is None:
            taken[normalise(answer.question)] = sentence.id
        return problem

    def again(i: int, answer: ParaphraseAnswer, problem: str) -> str:
        lang = clozes[i].fact.sentence.lang
        return prompts.render("paraphrase_again", lang, answer=clozes[i].answer, question=answer.question).user

    outcomes = ask_in_rounds(client, spec, first, ParaphraseAnswer, review, again)
    for rounds, texts in zip(outcomes, given, strict=True):
        rounds.given = texts
    return outcomes


def _ask_questions(
    clozes: Sequence[ClozeRecord], spec: str, client: StructuredClient, prompts: PromptTable, taken: dict[str, str]
) -> list[Rounds]:
    """The completion path's questions: one line each after the few-shot prompt 'paraphrase_fields'."""
    asked = [prompts.render_completion("paraphrase_fields", c.fact.sentence.lang, cloze=c.cloze, answer=c.answer)
             for c in clozes]

    def check(i: int) -> TextParser:
        cloze, label = clozes[i], asked[i].text.rsplit("\n", 1)[-1]
        template = prompts.template("paraphrase_fields", cloze.fact.sentence.lang)

        def parse(text: str) -> tuple[ParaphraseAnswer | None, str | None]:
            question = first_line(text, label)
            if not question or BLANK in question:
                return None, f"invalid_output: {'no question' if not question else 'the question holds ' + BLANK}"
            if not question.endswith(QUESTION_ENDS):
                return None, "not_a_question: the output does not end as a question"
            problem = question_problem(question, cloze.answer, template, taken, cloze.fact.sentence.id)
            if problem is None:
                taken[normalise(question)] = cloze.fact.sentence.id
                return ParaphraseAnswer(reasoning="", question=question), None
            return None, problem

        return parse

    return ask_fields(client, spec, asked, [check(i) for i in range(len(clozes))])


def _rows(clozes: Sequence[ClozeRecord], outcomes: Sequence[Rounds]) -> list[StageRow[QueryRecord] | None]:
    """One row per cloze from how asking for its question ended."""
    rows: list[StageRow[QueryRecord] | None] = []
    for cloze, rounds in zip(clozes, outcomes, strict=True):
        if rounds.transport_failed:
            rows.append(None)
            continue
        answer: ParaphraseAnswer | None = rounds.value
        record = QueryRecord(
            cloze_record=cloze, reasoning=answer.reasoning if answer else "",
            question=answer.question.strip() if answer else "",
            rejected=_rejected(rounds, rounds.given), call=rounds.merged_call(),
        )
        sentence = cloze.fact.sentence
        if answer is None:
            rows.append(StageRow(sentence.id, sentence.lang, "invalid", rounds.error or "invalid output", record))
            continue
        note = f"{len(record.rejected)} question(s) rejected" if record.rejected else "question written"
        rows.append(StageRow(sentence.id, sentence.lang, "kept", note, record))
    return rows
