"""What a generation run reports from its stage tables: the stage counts (the paper's Table 1), the cost
of its calls, and the inputs whose LLM output stayed invalid."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from crossknow.adaxeval.records import (
    CallInfo,
    DistractorRecord,
    EntityRecord,
    FactRecord,
    QualityRecord,
    QueryRecord,
    SentenceRecord,
    SplitRecord,
    StageCount,
)
from crossknow.adaxeval.stages import StageStore
from crossknow.data.schemas import Record

LABELS = {
    "documents": "Document pairs",
    "split": "Split sentences",
    "ner": "Sentences with >= 2 entities",
    "sample": "Sampled sentences",
    "facts": "Factual sentences (triple extracted)",
    "queries": "Cloze queries / paraphrases",
    "distractors": "Items with 3 distractors",
    "quality": "After quality filtering",
}
"""Row labels of the stage table, in pipeline order."""


def own_calls(record: Record) -> list[CallInfo]:
    """The calls a stage made for one record (not those of the earlier stages it embeds)."""
    if isinstance(record, EntityRecord):
        return [record.call] if record.call else []
    if isinstance(record, FactRecord):
        return [vote.call for vote in record.votes]
    if isinstance(record, QueryRecord | DistractorRecord):
        return [record.call]
    if isinstance(record, QualityRecord):
        return [record.in_language_call, record.cross_language_call]
    return []


def stage_counts(
    stores: Sequence[StageStore], langs: Sequence[str], n_pairs: int, sampled: Sequence[SentenceRecord] | None
) -> list[StageCount]:
    """The stage table: inputs kept by each stage per language, with the invalid ones beside them."""
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
    return counts


def _row(stage: str, kept: Counter[str], invalid: Counter[str], langs: Sequence[str]) -> StageCount:
    return StageCount(
        stage=stage, label=LABELS[stage], counts={lang: kept[lang] for lang in langs},
        invalid={lang: invalid[lang] for lang in langs if invalid[lang]},
    )


def total_cost(stores: Sequence[StageStore]) -> float:
    """USD of every call behind the committed rows of `stores`."""
    return sum(call.cost_usd for store in stores for row in store.rows() for call in own_calls(row.record))


def invalid_lines(stores: Sequence[StageStore]) -> list[str]:
    """invalid.jsonl: one JSON line per input whose LLM output stayed invalid, with the raw outputs."""
    lines = []
    for store in stores:
        for row in store.rows():
            if row.status != "invalid":
                continue
            raw = [call.raw_text for call in own_calls(row.record) if call.error is not None]
            entry = {"stage": store.name, "key": row.key, "lang": row.lang, "error": row.note, "raw_text": raw}
            lines.append(json.dumps(entry, ensure_ascii=False) + "\n")
    return lines
