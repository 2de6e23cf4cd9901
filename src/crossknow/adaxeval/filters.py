"""Stage 'quality': the writer judges each item (the short paper's quality filtering, section 2.1).

In-language, the cloze, the paraphrase and the wrong options (in the cloze and as answers to the question, A.6.4)
are each Good or Poor; cross-language, the paired document's support is 2, 1 or 0. By default an item is kept
with all four Good and support 2 (crossknow's criteria). A base model answers five few-shot yes/no prompts
instead, Good at P(yes) >= `YES_THRESHOLD`, calibrated as in `crossknow.adaxeval.facts_completion`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import Field

from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.records import DistractorRecord, QualityRecord
from crossknow.adaxeval.stages import StageRow, call_info, merged_call, transport_failed
from crossknow.data.schemas import BLANK, Record
from crossknow.generation.structured import YES_THRESHOLD, StructuredClient

Grade = Literal["Good", "Poor"]
JUDGEMENTS = ("cloze", "paraphrase", "options_cloze", "options_question")
"""The in-language judgements, in the order of InLanguageJudgement's fields."""


class InLanguageJudgement(Record):
    """The writer's answer to the 'quality_in_language' prompt."""

    cloze: Grade = Field(description="Is the cloze faithful to the sentence and factually consistent?")
    paraphrase: Grade = Field(description="Is the question fluent, equivalent and reworded?")
    options_cloze: Grade = Field(description="Are the wrong options plausible and clearly wrong in the cloze?")
    options_question: Grade = Field(
        description="Are the wrong options plausible and clearly wrong as answers to the question?"
    )


class CrossLanguageJudgement(Record):
    """The writer's answer to the 'quality_cross_language' prompt."""

    support: Literal[0, 1, 2] = Field(description="2 stated, 1 inferable, 0 not supported by the other document.")


def passes(judged: InLanguageJudgement, crossed: CrossLanguageJudgement) -> bool:
    """The default filter: all Good and cross-language support 2."""
    grades = (judged.cloze, judged.paraphrase, judged.options_cloze, judged.options_question)
    return all(grade == "Good" for grade in grades) and crossed.support == 2


def quality_rows(
    items: Sequence[DistractorRecord],
    writer: tuple[str, StructuredClient],
    prompts: PromptTable,
    partner: Callable[[str, str], tuple[str, str]],
    apply_filter: bool,
    calibrate: bool = True,
) -> list[StageRow[QualityRecord] | None]:
    """One row per item. `partner(pair_id, lang)` gives (language, text) of the paired document in the
    other language; `calibrate` (the completion path only) calibrates an exact P(yes)."""
    spec, client = writer
    return client.per_form(
        chat=lambda: _chat_quality(items, spec, client, prompts, partner, apply_filter),
        completion=lambda: _judge_yes_no(items, spec, client, prompts, partner, apply_filter, calibrate))()


def _chat_quality(
    items: Sequence[DistractorRecord], spec: str, client: StructuredClient, prompts: PromptTable,
    partner: Callable[[str, str], tuple[str, str]], apply_filter: bool,
) -> list[StageRow[QualityRecord] | None]:
    """`quality_rows` for a chat model: both judgements as JSON."""
    in_prompts, cross_prompts = [], []
    for item in items:
        query, sentence = item.query, item.query.fact.sentence
        triple = query.triple  # the regenerated triple the cloze was written from
        in_prompts.append(
            prompts.render(
                "quality_in_language", sentence.lang, sentence=sentence.text, subject=triple.subject,
                relation=triple.relation, object=triple.object, cloze=query.cloze, question=query.question,
                answer=query.answer,
                distractors="\n".join(f"{k}) {d}" for k, d in enumerate(item.distractors, start=1)),
            )
        )
        other_lang, document = partner(sentence.pair_id, sentence.lang)
        cross_prompts.append(
            prompts.render(
                "quality_cross_language", sentence.lang,
                other_language=prompts.language_name(sentence.lang, other_lang), document=document,
                question=query.question, answer=query.answer,
            )
        )
    # call_many validates against one schema per call: one call per judgement kind.
    in_outcomes = client.call_many(in_prompts, InLanguageJudgement)
    cross_outcomes = client.call_many(cross_prompts, CrossLanguageJudgement)
    rows: list[StageRow[QualityRecord] | None] = []
    for item, judged, crossed in zip(items, in_outcomes, cross_outcomes, strict=True):
        if transport_failed(judged) or transport_failed(crossed):
            rows.append(None)
            continue
        j: InLanguageJudgement | None = judged.value
        c: CrossLanguageJudgement | None = crossed.value
        record = QualityRecord(
            item=item,
            cloze=j.cloze if j else None, paraphrase=j.paraphrase if j else None,
            options_cloze=j.options_cloze if j else None, options_question=j.options_question if j else None,
            support=c.support if c else None,
            in_language_call=call_info(judged, spec), cross_language_call=call_info(crossed, spec),
        )
        sentence = item.query.fact.sentence
        if j is None or c is None:
            error = "; ".join(o.error or "" for o in (judged, crossed) if not o.valid)
            rows.append(StageRow(sentence.id, sentence.lang, "invalid", error or "invalid output", record))
            continue
        note = (
            f"cloze {j.cloze}, paraphrase {j.paraphrase}, options in the cloze {j.options_cloze}, "
            f"options for the question {j.options_question}, support {c.support}"
        )
        kept = passes(j, c) or not apply_filter
        rows.append(StageRow(sentence.id, sentence.lang, "kept" if kept else "dropped", note, record))
    return rows


def _judge_yes_no(
    items: Sequence[DistractorRecord],
    spec: str,
    client: StructuredClient,
    prompts: PromptTable,
    partner: Callable[[str, str], tuple[str, str]],
    apply_filter: bool,
    calibrate: bool,
) -> list[StageRow[QualityRecord] | None]:
    """The completion path: five yes/no prompts per item, P(yes) >= YES_THRESHOLD a yes (see the module docstring)."""
    asked, kinds = [], []
    for item in items:
        query, sentence = item.query, item.query.fact.sentence
        options = ", ".join(item.distractors)
        other_lang, document = partner(sentence.pair_id, sentence.lang)
        other_language = prompts.language_name(sentence.lang, other_lang)
        statement = query.cloze.replace(BLANK, query.answer)
        asked += [
            prompts.render_completion("judge_cloze", sentence.lang, sentence=sentence.text, statement=statement),
            prompts.render_completion("judge_paraphrase", sentence.lang, cloze=query.cloze, answer=query.answer,
                                      question=query.question),
            prompts.render_completion("judge_options_cloze", sentence.lang, cloze=query.cloze, answer=query.answer,
                                      distractors=options),
            prompts.render_completion("judge_options_question", sentence.lang, question=query.question,
                                      answer=query.answer, distractors=options),
            prompts.render_completion("judge_cross_language", sentence.lang, other_language=other_language,
                                      document=document, question=query.question, answer=query.answer),
        ]
        kinds += [(f"judge_{name}", sentence.lang, "") for name in JUDGEMENTS]
        kinds.append(("judge_cross_language", sentence.lang, other_language))
    baselines = {kind: _baseline(client, prompts, *kind) if calibrate else None for kind in sorted(set(kinds))}
    outcomes = client.yes_no_many(asked, [baselines[kind] for kind in kinds])
    rows: list[StageRow[QualityRecord] | None] = []
    for k, item in enumerate(items):
        mine = outcomes[5 * k : 5 * k + 5]
        if any(transport_failed(o) for o in mine):
            rows.append(None)
            continue
        calls = [call_info(o, spec) for o in mine]
        sentence = item.query.fact.sentence
        if not all(o.valid for o in mine):
            error = "; ".join(o.error or "invalid output" for o in mine if not o.valid)
            record = QualityRecord(item=item, cloze=None, paraphrase=None, options_cloze=None, options_question=None,
                                   support=None, in_language_call=merged_call(calls[:4], error, mine[0].raw_text),
                                   cross_language_call=calls[4])
            rows.append(StageRow(sentence.id, sentence.lang, "invalid", error, record))
            continue
        names = (*JUDGEMENTS, "support")
        p_yes = dict(zip(names, (round(float(o.value), 6) for o in mine), strict=True))
        raw = {name: o.raw_yes_probability for name, o in zip(names, mine, strict=True)
               if o.raw_yes_probability is not None}
        grades = {name: "Good" if p_yes[name] >= YES_THRESHOLD else "Poor" for name in JUDGEMENTS}
        judged = InLanguageJudgement(**grades)
        crossed = CrossLanguageJudgement(support=2 if p_yes["support"] >= YES_THRESHOLD else 0)
        leans = [baselines[kind] for kind in kinds[5 * k : 5 * k + 5]]
        record = QualityRecord(
            item=item, **grades, support=crossed.support, in_language_call=merged_call(calls[:4], None, ""),
            cross_language_call=calls[4], yes_probability=p_yes, raw_yes_probability=raw,
            yes_baseline={name: round(lean, 6) for name, lean in zip(p_yes, leans, strict=True) if lean is not None},
        )
        note = ", ".join(f"P(yes) {name} {value:.3f}" for name, value in p_yes.items())
        kept = passes(judged, crossed) or not apply_filter
        rows.append(StageRow(sentence.id, sentence.lang, "kept" if kept else "dropped", note, record))
    return rows


def _baseline(
    client: StructuredClient, prompts: PromptTable, task: str, lang: str, other_language: str
) -> float | None:
    """The content-free P(yes) of judgement `task` in `lang` (the cross-language one naming `other_language`)."""
    kept = {"other_language": other_language} if other_language else {}
    return client.yes_no_baseline(prompts.render_content_free(task, lang, **kept))
