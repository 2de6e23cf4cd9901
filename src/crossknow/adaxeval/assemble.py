"""Assembly: the kept items as AdaXEval sets per language, and the interlingual pairing.

Each set line is in the release format `crossknow evaluate` reads (the files and the metadata: docs/adaxeval.md).
Options are shuffled by a generator seeded from (run seed, item id), so that an item's order does not depend on
which other items were generated.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crossknow.adaxeval.records import QualityRecord
from crossknow.data.pairing import INTERLINGUAL_FILE, InterlingualLink
from crossknow.store.atomic import atomic_write_text

DATASET_DIR = "dataset"
SET_FILES = {"cloze": "memorization.jsonl", "question": "generalization.jsonl"}
"""Item kind -> file name in dataset/{lang}/."""


def option_seed(seed: int, item_id: str) -> int:
    """The shuffling seed of one item: from the run's seed and the item id only."""
    digest = hashlib.sha256(f"{seed}:{item_id}".encode()).hexdigest()
    return int(digest[:16], 16)


def shuffled_options(answer: str, distractors: Sequence[str], seed: int, item_id: str) -> tuple[list[str], int]:
    """(options, index of the answer): the answer and the distractors in a seeded random order."""
    options = [answer, *distractors]
    order = list(range(len(options)))
    random.Random(option_seed(seed, item_id)).shuffle(order)
    return [options[i] for i in order], order.index(0)


def release_lines(record: QualityRecord, seed: int, partner_doc_id: str) -> dict[str, dict[str, Any]]:
    """The item's memorisation and generalisation lines (kind -> JSON object)."""
    item = record.item
    query = item.query
    fact = query.fact
    sentence = fact.sentence
    assert fact.triple is not None
    triple = query.triple
    options, answer_idx = shuffled_options(query.answer, item.distractors, seed, sentence.id)
    metadata = {
        "docid": sentence.doc_id,
        "sentid": sentence.index,
        "correct_answer": query.answer,
        "triple": triple.model_dump(),
        "detector_triple": fact.triple.model_dump(),
        "sentence": sentence.text,
        "pair_id": sentence.pair_id,
        "partner_docid": partner_doc_id,
        "fact_confidence": fact.confidence_sum,
        "cloze_similarity": query.cloze_similarity,
        "length_ratio": item.length_ratio,
        "quality": {
            "cloze": record.cloze, "paraphrase": record.paraphrase, "options_cloze": record.options_cloze,
            "options_question": record.options_question, "cross_language": record.support,
        },
    }
    base = {"id": sentence.id, "lang": sentence.lang, "options": options, "answer_idx": answer_idx}
    return {
        "cloze": {**base, "question": query.cloze, "metadata": metadata},
        "question": {**base, "question": query.question, "metadata": metadata},
    }


def write_dataset(
    out: Path, records: Sequence[QualityRecord], langs: Sequence[str], seed: int, partners: dict[str, dict[str, str]]
) -> dict[str, str]:
    """Write the sets and the pairing (atomically, each file whole); return name -> relative path.

    `records` are the kept items in output order; `partners[pair_id][lang]` is the document id of
    the pair's member in `lang`.
    """
    files: dict[str, str] = {}
    lines: dict[tuple[str, str], list[str]] = {(lang, kind): [] for lang in langs for kind in SET_FILES}
    links: list[str] = []
    for record in records:
        sentence = record.item.query.fact.sentence
        partner_lang = next(lang for lang in langs if lang != sentence.lang)
        partner_doc = partners[sentence.pair_id][partner_lang]
        for kind, line in release_lines(record, seed, partner_doc).items():
            lines[(sentence.lang, kind)].append(json.dumps(line, ensure_ascii=False) + "\n")
        link = InterlingualLink(
            item_id=sentence.id, lang=sentence.lang, doc_id=sentence.doc_id, pair_id=sentence.pair_id,
            partner_lang=partner_lang, partner_doc_id=partner_doc, support=record.support,
        )
        links.append(link.model_dump_json() + "\n")
    for (lang, kind), content in lines.items():
        relative = f"{DATASET_DIR}/{lang}/{SET_FILES[kind]}"
        atomic_write_text(out / relative, "".join(content))
        files[f"{lang}_{'memorization' if kind == 'cloze' else 'generalization'}"] = relative
    relative = f"{DATASET_DIR}/{INTERLINGUAL_FILE}"
    atomic_write_text(out / relative, "".join(links))
    files["interlingual"] = relative
    return files
