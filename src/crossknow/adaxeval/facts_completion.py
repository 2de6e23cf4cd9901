"""Fact detection for a base-model detector (`StructuredClient.prompt_format == "completion"`): crossknow's few-shot
form of Appendix A.1's fields, asked one at a time, structure by construction.

1. `factuality`: the prompt `facts_judge` ends where " yes" or " no" follows; the confidence is P(yes) from
   `StructuredClient.yes_no_many` (exact from a local model: A.1's "probability of yes token", without JSON around
   it), and the detector says yes when P(yes) >= 0.5 (crossknow's choice: the more likely of the two words).
   An exact P(yes) is calibrated (crossknow's choice, not the paper's: contextual calibration, Zhao et al., 2021):
   divided by P(yes) of the same prompt with the sentence replaced by content-free inputs, per language, since a
   base model's lean differs by language (Gemma 3 270M: about 0.65 in English, 0.21 in Japanese, so that no
   Japanese sentence reached 0.5 uncalibrated). The vote records that baseline (`yes_baseline`) and the
   uncalibrated P(yes) (`raw_yes_probability`); `--no-calibrate-yes` turns calibration off, and the raw P(yes)
   then decides.
2. `triple`, for a yes only: its subject (`facts_subject`), then its relation (`facts_relation`, given the subject),
   then its object (`facts_object`, given both), each one line ended at the newline. The subject and the object must
   occur in the sentence (`checks.occurs`, case folded), the object differ from the subject, and no field start
   with one of the prompt's labels ("Object:", "Sentence:"...); a rejected field is asked again (the client
   samples its retries), and a yes whose triple stays invalid has none (the sentence is then dropped as
   `no_triple` unless another detector gives one).
3. Appendix A.1's reason is not asked of a base model (one more generated sentence would cost more than the two
   fields above together, and nothing downstream reads it): `reasoning` records that.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from crossknow.adaxeval.checks import occurs
from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.records import CallInfo, DetectorVote, SentenceRecord, Triple
from crossknow.adaxeval.stages import ask_fields, call_info, merged_call, normalise, transport_failed
from crossknow.generation.structured import YES_THRESHOLD, StructuredClient, TextParser

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
