"""AdaXEval multiple-choice sets: the release format and the paper-examples variant (docs/adaxeval.md).

Release lines (`id`, `question`, `options`, `answer_idx`, `metadata`) give a cloze item when the question holds
[BLANK], else a question item; ids become f"{kind}:{id}" (the release reuses ids across its files). Paper-examples
lines (`lang`, `sentence`, `cloze`, `paraphrase`, `options`, `answer_idx`) give one of each. A record of the wrong
shape raises InputError; one of the right shape that cannot be scored is reported as an InvalidRecord.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from crossknow.data.jsonl import iter_json_lines, mc_item_or_problem, require, require_strings
from crossknow.data.schemas import BLANK, InvalidRecord, ItemSet, MCItem
from crossknow.errors import InputError

FORMAT = "adaxeval"

Problem = tuple[str | None, str]
"""(field, reason) for a record that cannot be scored."""

_JAPANESE_SCRIPT = re.compile(
    "[\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\uff66-\uff9f"  # half-width Katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"  # CJK ideographs
)


def detect_lang(*texts: str) -> str:
    """'ja' when any text holds Hiragana, Katakana or a CJK ideograph, else 'en'.

    AdaXEval is English-Japanese, so Chinese text is also reported as 'ja'.
    """
    return "ja" if any(_JAPANESE_SCRIPT.search(text) for text in texts) else "en"


def is_paper_examples(record: dict[str, Any]) -> bool:
    """Whether a record is of the paper-examples variant (it has `cloze` and `paraphrase`)."""
    return "cloze" in record and "paraphrase" in record


def read_adaxeval(path: str | Path, lang: str | None = None, limit: int | None = None) -> ItemSet:
    """Read an AdaXEval file (release or paper-examples variant, told by the first line's keys).

    `lang` is the language of records that do not carry one; without it the language is detected
    from the script and metadata["lang_detected"] is set. `limit` keeps the first N usable items.
    """
    items: list[MCItem] = []
    invalid: list[InvalidRecord] = []
    first_line: dict[str, int] = {}
    read_line = None
    for line_no, record in iter_json_lines(path):
        if limit is not None and len(items) >= limit:
            break
        if read_line is None:
            read_line = _example_items if is_paper_examples(record) else _release_item
        new_items, problems = read_line(record, path, line_no, lang)
        invalid.extend(
            InvalidRecord(path=str(path), line=line_no, field=field, reason=reason)
            for field, reason in problems
        )
        for item in new_items:
            if item.id in first_line:
                reason = f"duplicate id {item.id!r}, first used on line {first_line[item.id]}"
                invalid.append(
                    InvalidRecord(path=str(path), line=line_no, field="id", reason=reason)
                )
                continue
            first_line[item.id] = line_no
            items.append(item)
    return ItemSet(name=Path(path).stem, format=FORMAT, items=items[:limit], invalid=invalid)


def _record_lang(
    record: dict[str, Any], path: str | Path, line: int, lang: str | None
) -> str | None:
    """The record's own `lang`, checked against an explicit `lang`; else the explicit one."""
    own = require(record, "lang", str, path, line, optional=True)
    if own is not None and lang is not None and own != lang:
        raise InputError(
            path,
            f"the record says {own!r} but lang={lang!r} was asked for",
            line=line,
            field="lang",
        )
    return own or lang


def _release_item(
    record: dict[str, Any], path: str | Path, line: int, lang: str | None
) -> tuple[list[MCItem], list[Problem]]:
    source_id = require(record, "id", (str, int), path, line)
    question = require(record, "question", str, path, line)
    options = require_strings(record, "options", path, line)
    answer = require(record, "answer_idx", int, path, line)
    metadata = dict(require(record, "metadata", dict, path, line, optional=True) or {})
    correct = metadata.get("correct_answer")
    if correct is not None and 0 <= answer < len(options) and correct != options[answer]:
        reason = (
            f"correct_answer {correct!r} is not the keyed option {answer} ({options[answer]!r})"
        )
        return [], [("metadata.correct_answer", reason)]
    item_lang = _record_lang(record, path, line, lang)
    if item_lang is None:
        item_lang = detect_lang(question, *options)
        metadata["lang_detected"] = True
    metadata["source_id"] = source_id
    kind = "cloze" if BLANK in question else "question"
    item = mc_item_or_problem(
        {
            "id": f"{kind}:{source_id}",
            "lang": item_lang,
            "kind": kind,
            "prompt": question,
            "options": options,
            "answer": answer,
            "metadata": metadata,
        },
        {"prompt": "question", "answer": "answer_idx"},
    )
    return ([item], []) if isinstance(item, MCItem) else ([], [item])


def _example_items(
    record: dict[str, Any], path: str | Path, line: int, lang: str | None
) -> tuple[list[MCItem], list[Problem]]:
    item_lang = _record_lang(record, path, line, lang)
    sentence = require(record, "sentence", str, path, line)
    cloze = require(record, "cloze", str, path, line)
    paraphrase = require(record, "paraphrase", str, path, line)
    options = require_strings(record, "options", path, line)
    answer = require(record, "answer_idx", int, path, line)
    metadata: dict[str, Any] = {"example": line, "sentence": sentence}
    if item_lang is None:
        item_lang = detect_lang(cloze, paraphrase, *options)
        metadata["lang_detected"] = True
    built = [
        mc_item_or_problem(
            {
                "id": f"{kind}:{line}",
                "lang": item_lang,
                "kind": kind,
                "prompt": prompt,
                "options": options,
                "answer": answer,
                "metadata": dict(metadata),
            },
            {"prompt": field, "answer": "answer_idx"},
        )
        for kind, prompt, field in (
            ("cloze", cloze, "cloze"),
            ("question", paraphrase, "paraphrase"),
        )
    ]
    items = [item for item in built if isinstance(item, MCItem)]
    # A flaw of the shared options or answer spoils both items: report it once.
    problems = list(dict.fromkeys(item for item in built if not isinstance(item, MCItem)))
    return items, problems


def source_documents(path: str | Path) -> dict[str, int]:
    """The documents an AdaXEval set was generated from: `metadata.docid` -> the first line naming it.

    Every line counts, an item that cannot be scored included: it was still generated from its document.
    A line that names no document (no `metadata.docid`, as in the paper-examples variant) raises
    InputError naming the file, line and field, since its document could not be left out of training.
    """
    documents: dict[str, int] = {}
    for line_no, record in iter_json_lines(path):
        metadata = record.get("metadata")
        docid = metadata.get("docid") if isinstance(metadata, dict) else None
        if docid is None or docid == "":
            raise InputError(
                path, "the item names no source document, so the document it was generated from cannot be "
                "left out", line=line_no, field="metadata.docid",
            )
        if isinstance(docid, bool) or not isinstance(docid, str | int):
            raise InputError(path, f"expected a string or an integer, found {docid!r}", line=line_no,
                             field="metadata.docid")
        documents.setdefault(str(docid), line_no)
    if not documents:
        raise InputError(path, "the set holds no items")
    return documents
