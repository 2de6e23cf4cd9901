"""Fact detection for a base-model detector (completion form): crossknow's few-shot form of Appendix A.1's
fields, asked one at a time, so that the structure comes from construction.

`factuality` is P(yes) after a prompt that ends where " yes" or " no" follows, calibrated per language against
content-free inputs (contextual calibration, crossknow's choice; `--no-calibrate-yes`). For a yes, the triple's
subject, relation and object follow, one line each; A.1's reason is not asked (`reasoning` records that).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from crossknow.adaxeval.checks import occurs
from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.records import CallInfo, DetectorVote, SentenceRecord, Triple
from crossknow.adaxeval.stages import ask_fields, call_info, merged_call, normalise, transport_failed
from crossknow.generation.ask import TextParser
from crossknow.generation.structured import YES_THRESHOLD, StructuredClient

NOT_ASKED = "not asked: a base-model detector answers the fields only (crossknow.adaxeval.facts_completion)"
"""The `reasoning` of a completion-form vote."""
LABEL = re.compile(r"^(?:Sentence|Subject|Relation|Object|States a fact|文|主語|関係|目的語|事実)\s*[:：]")
"""A line that starts with a label of the prompts: the model went on writing the prompt instead of the field."""
FIELDS = ("subject", "relation", "object")
"""The triple's fields, in the order they are asked."""


def completion_votes(
    sentences: Sequence[SentenceRecord], spec: str, client: StructuredClient, prompts: PromptTable,
    calibrate: bool = True,
) -> list[DetectorVote | None]:
    """One vote per sentence from the base-model detector `spec` (see the module docstring), its exact P(yes)
    calibrated unless `calibrate` is False; None where a request failed in transport (the sentence is left for a
    later run)."""
    langs = sorted({s.lang for s in sentences})
    baselines = {lang: client.yes_no_baseline(prompts.render_content_free("facts_judge", lang)) if calibrate else None
                 for lang in langs}
    judged = client.yes_no_many([prompts.render_completion("facts_judge", s.lang, sentence=s.text) for s in sentences],
                                [baselines[s.lang] for s in sentences])
    said_yes = [k for k, outcome in enumerate(judged) if outcome.valid and outcome.value >= YES_THRESHOLD]
    triples = _triples([sentences[k] for k in said_yes], spec, client, prompts)
    extracted = dict(zip(said_yes, triples, strict=True))
    votes: list[DetectorVote | None] = []
    for k, outcome in enumerate(judged):
        if transport_failed(outcome) or (k in extracted and extracted[k] is None):
            votes.append(None)
            continue
        calls = [call_info(outcome, spec)]
        triple = None
        if k in extracted:
            triple, more = extracted[k]  # type: ignore[misc]
            calls += more
        valid = outcome.valid
        votes.append(DetectorVote(
            detector=spec,
            factuality=("yes" if outcome.value >= YES_THRESHOLD else "no") if valid else None,
            confidence=round(float(outcome.value), 6) if valid else None,
            raw_yes_probability=outcome.raw_yes_probability if valid else None,
            yes_baseline=None if baselines[sentences[k].lang] is None else round(baselines[sentences[k].lang], 6),
            triple=triple,
            reasoning=NOT_ASKED if valid else None,
            call=merged_call(calls, calls[-1].error if triple is None and k in extracted else outcome.error,
                             calls[-1].raw_text or ""),
        ))
    return votes


def _triples(
    sentences: Sequence[SentenceRecord], spec: str, client: StructuredClient, prompts: PromptTable
) -> list[tuple[Triple | None, list[CallInfo]] | None]:
    """Per sentence, (its triple or None when a field stayed invalid, the calls made), asked field by field; None
    where a request failed in transport."""
    known: list[dict[str, str]] = [{} for _ in sentences]
    calls: list[list[CallInfo]] = [[] for _ in sentences]
    failed: set[int] = set()
    open_ = list(range(len(sentences)))
    for name in FIELDS:
        task = f"facts_{name}"
        asked = [prompts.render_completion(task, sentences[i].lang, sentence=sentences[i].text, **known[i])
                 for i in open_]
        checks = [_field_check(name, sentences[i].text, known[i]) for i in open_]
        still = []
        for i, rounds in zip(open_, ask_fields(client, spec, asked, checks), strict=True):
            if rounds.transport_failed:
                failed.add(i)
                continue
            calls[i] += rounds.calls
            if rounds.value is not None:
                known[i][name] = rounds.value
                still.append(i)
        open_ = still
    return [None if i in failed else (Triple(**known[i]) if len(known[i]) == len(FIELDS) else None, calls[i])
            for i in range(len(sentences))]


def _field_check(name: str, sentence: str, known: dict[str, str]) -> TextParser:
    """The parser of one triple field: its first line, not empty, not starting with one of the prompt's labels; a
    subject or an object that occurs in the sentence, an object other than the subject. (No check against the
    examples' values: a grounded subject or object is the sentence's own even where an example has the same words,
    and a relation such as "is treated with" may well be the example's.)"""

    def parse(text: str) -> tuple[str | None, str | None]:
        value = text.strip().splitlines()[0].strip() if text.strip() else ""
        if not value:
            return None, f"invalid_output: empty {name}"
        if LABEL.match(value):
            return None, f"prompt_echo: the {name} starts with one of the prompt's labels: {value[:60]!r}"
        if name != "relation" and not occurs(normalise(value), normalise(sentence)):
            return None, f"object_not_in_sentence: the {name} {value!r} does not occur in the sentence"
        if name == "object" and normalise(value) == normalise(known.get("subject", "")):
            return None, "invalid_output: the object repeats the subject"
        return value, None

    return parse
