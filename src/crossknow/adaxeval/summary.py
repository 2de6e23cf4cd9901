"""What a generation run reports from its stage tables: the stage counts (the paper's Table 1), the writer's
outputs rejected by reason, the cost of its calls, and the inputs whose LLM output stayed invalid."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import get_args

from crossknow.adaxeval.records import (
    CallInfo,
    ClozeRecord,
    DistractorRecord,
    DropReason,
    EntityRecord,
    FactRecord,
    FactRule,
    QualityRecord,
    QueryRecord,
    RejectCode,
    SentenceRecord,
    SplitRecord,
    StageCount,
    TripleRecord,
)
from crossknow.adaxeval.stages import StageRow, StageStore
from crossknow.data.schemas import Record

LABELS = {
    "documents": "Document pairs",
    "split": "Split sentences",
    "ner": "Sentences with >= 2 entities",
    "sample": "Sampled sentences",
    "facts": "Factual sentences (triple extracted)",
    "facts_dropped_sum": "  dropped: summed P(yes) not above the threshold",
    "facts_dropped_votes": "  dropped: fewer yes votes than --min-yes",
    "facts_dropped_no_triple": "  dropped: kept by the rule, but no yes vote gave a triple",
    "triples": "Regenerated triples (object in the sentence)",
    "cloze": "Cloze queries",
    "paraphrase": "Paraphrases",
    "distractors": "Items with 3 distractors",
    "quality": "After quality filtering",
}
"""Row labels of the stage table, in pipeline order."""

RULE_ROWS: dict[str, tuple[DropReason, ...]] = {"sum": ("sum",), "votes": ("votes",), "both": ("sum", "votes")}
"""The drop rows the stage table shows under 'facts' for each --fact-rule (plus 'no_triple' when it occurs)."""


def own_calls(record: Record) -> list[CallInfo]:
    """The calls a stage made for one record (not those of the earlier stages it embeds)."""
    if isinstance(record, EntityRecord):
        return [record.call] if record.call else []
    if isinstance(record, FactRecord):
        return [vote.call for vote in record.votes]
    if isinstance(record, TripleRecord | ClozeRecord | QueryRecord | DistractorRecord):
        return [record.call]
    if isinstance(record, QualityRecord):
        return [record.in_language_call, record.cross_language_call]
    return []


def stage_counts(
    stores: Sequence[StageStore],
    langs: Sequence[str],
    n_pairs: int,
    sampled: Sequence[SentenceRecord] | None,
    fact_rule: FactRule,
) -> list[StageCount]:
    """The stage table: inputs kept by each stage per language, with the invalid ones beside them; under
    'facts', the sentences each applied rule dropped (one that failed both rules counts in both rows)."""
    counts = [StageCount(stage="documents", label=LABELS["documents"], counts=dict.fromkeys(langs, n_pairs))]
    for store in stores:
        rows = store.rows()
        if store.name == "split":
            sentences: Counter[str] = Counter()
            for row in rows:
                record: SplitRecord = row.record
                sentences[row.lang] += len(record.sentences)
            counts.append(_row("split", sentences, Counter(), langs))
        else:
            kept = Counter(row.lang for row in rows if row.status == "kept")
            invalid = Counter(row.lang for row in rows if row.status == "invalid")
            counts.append(_row(store.name, kept, invalid, langs))
        if store.name == "ner" and sampled is not None:
            counts.append(_row("sample", Counter(s.lang for s in sampled), Counter(), langs))
        if store.name == "facts":
            counts += _drop_rows(rows, langs, fact_rule)
    return counts


def _drop_rows(rows: Sequence[StageRow], langs: Sequence[str], fact_rule: FactRule) -> list[StageCount]:
    """The 'facts' drop rows: one per rule the setting applies, and 'no_triple' when some sentence has it."""
    by_reason: dict[str, Counter[str]] = {}
    for row in rows:
        if row.status == "dropped":
            record: FactRecord = row.record
            for reason in record.dropped_by:
                by_reason.setdefault(reason, Counter())[row.lang] += 1
    reasons = [*RULE_ROWS[fact_rule], *(["no_triple"] if "no_triple" in by_reason else [])]
    return [_row(f"facts_dropped_{reason}", by_reason.get(reason, Counter()), Counter(), langs) for reason in reasons]


def binary_confidence(facts: StageStore) -> bool | None:
    """True when every valid vote's confidence is exactly 0 or 1; None when there is no valid vote."""
    values = [
        vote.confidence for row in facts.rows() for vote in row.record.votes if vote.confidence is not None
    ]
    return all(value in (0.0, 1.0) for value in values) if values else None


def _row(stage: str, kept: Counter[str], invalid: Counter[str], langs: Sequence[str]) -> StageCount:
    return StageCount(
        stage=stage, label=LABELS[stage], counts={lang: kept[lang] for lang in langs},
        invalid={lang: invalid[lang] for lang in langs if invalid[lang]},
    )


def total_cost(stores: Sequence[StageStore]) -> float:
    """USD of every call behind the committed rows of `stores`."""
    return sum(call.cost_usd for store in stores for row in store.rows() for call in own_calls(row.record))


OPTION_CODES = {"empty": "empty_option", "equals the answer": "equals_answer", "duplicate": "duplicate",
                "prompt echo": "prompt_echo"}
"""A dropped distractor's reason -> the code the summary counts it under."""


def rejected_outputs(record: Record) -> list[tuple[str, str]]:
    """(the writer's output as written, why it was rejected) for every output a stage rejected for one record."""
    if isinstance(record, TripleRecord):
        return [(r.triple.model_dump_json(), r.reason) for r in record.rejected]
    if isinstance(record, ClozeRecord | QueryRecord):
        return [(r.text, r.reason) for r in record.rejected]
    if isinstance(record, DistractorRecord):
        return [(d.text, d.reason) for d in record.dropped]
    return []


def rejection_counts(stores: Sequence[StageStore]) -> dict[str, dict[str, int]]:
    """Stage -> rejection code -> how many outputs of the writer were rejected (every round), plus
    'invalid_output' for inputs whose last output was malformed (not a rejection)."""
    codes = set(get_args(RejectCode))
    counts: dict[str, dict[str, int]] = {}
    for store in stores:
        found: Counter[str] = Counter()
        for row in store.rows():
            for _, reason in rejected_outputs(row.record):
                found[OPTION_CODES.get(reason) or reason.partition(":")[0]] += 1
            error = row.note if row.status == "invalid" else ""
            if error and not error.startswith("rejected in") and error.partition(":")[0] not in codes:
                found["invalid_output"] += 1
        if found:
            counts[store.name] = dict(sorted(found.items()))
    return counts


def invalid_lines(stores: Sequence[StageStore]) -> list[str]:
    """invalid.jsonl: one JSON line per input whose LLM output stayed invalid, with the raw outputs and every
    output a stage rejected for it (`rejected`: the model's own text and why)."""
    lines = []
    for store in stores:
        for row in store.rows():
            if row.status != "invalid":
                continue
            raw = [call.raw_text for call in own_calls(row.record) if call.error is not None]
            rejected = [{"text": text, "reason": reason} for text, reason in rejected_outputs(row.record)]
            entry = {"stage": store.name, "key": row.key, "lang": row.lang, "error": row.note, "raw_text": raw,
                     "rejected": rejected}
            lines.append(json.dumps(entry, ensure_ascii=False) + "\n")
    return lines
