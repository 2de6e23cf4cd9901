"""Cross-Lingual Pitfalls release: `<Language>.json`, a JSON list of bilingual question pairs.

Each pair gives an English item (`question`, `choices`, `answer`) and a target-language one (`transquestion`,
`transchoices`, `transanswer`), linked by pair_id f"{Language}:{index}". A pair that cannot be scored on either side,
or whose sides are not the same question (`crossknow.data.pair_rules`), is one InvalidRecord and gives no item, so
that its two halves stay comparable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crossknow.data.guarded import load_json
from crossknow.data.jsonl import mc_item_or_problem, require, require_strings
from crossknow.data.languages import LANGUAGE_NAMES
from crossknow.data.pair_rules import flaw_reason, pair_flaws
from crossknow.data.schemas import InvalidRecord, ItemSet, MCItem
from crossknow.errors import InputError

FORMAT = "pitfalls"

RELEASE_LANGUAGES = ("am", "ar", "bn", "zh", "fr", "de", "he", "hi", "it", "ja", "ko", "es", "sw", "uk", "yo", "zu")
"""The release's target languages (ISO 639-1)."""
LANGUAGE_CODES: dict[str, str] = {LANGUAGE_NAMES[code]: code for code in RELEASE_LANGUAGES}
"""ISO 639-1 code of each target language of the release, keyed by its file stem (the language's English name)."""

METADATA_FIELDS = (
    "source",
    "category",
    "subject",
    "rate_ori",
    "rate_trans",
    "value",
    "oriquestion",
    "transori",
    "prequestion",
    "sufquestion",
    "transpre",
    "transsuf",
)
"""Fields of a pair kept in both items' metadata, when present: among them the original question and the
text inserted before it (`prequestion`, `transpre`) and after it (`sufquestion`, `transsuf`) on each side."""

SIDES = (
    ("question", "choices", "answer"),  # English
    ("transquestion", "transchoices", "transanswer"),  # target language
)
"""The (question, choices, answer) fields of each side of a pair."""


def language_code(path: str | Path) -> str:
    """The target language code named by a pair file's stem; InputError listing the known ones."""
    stem = Path(path).stem
    if stem not in LANGUAGE_CODES:
        known = ", ".join(LANGUAGE_CODES)
        raise InputError(
            path, f"the file name {stem!r} names no known target language; known: {known}"
        )
    return LANGUAGE_CODES[stem]


def load_pairs(path: str | Path) -> list[dict[str, Any]]:
    """The list of pair objects in a pair file; a clear InputError for any other JSON file
    (the release's *_results.json counts and source/*.json questions included)."""
    data = load_json(path)
    if isinstance(data, dict):
        hint = (
            " (a *_results.json file holds per-model counts)" if "Total Questions" in data else ""
        )
        raise InputError(path, f"expected a JSON list of question pairs, found an object{hint}")
    if not isinstance(data, list):
        raise InputError(
            path, f"expected a JSON list of question pairs, found {type(data).__name__}"
        )
    for position, pair in enumerate(data, start=1):
        if not isinstance(pair, dict):
            raise InputError(
                path, f"expected a pair object, found {type(pair).__name__}", line=position
            )
        if "transquestion" not in pair:
            raise InputError(
                path,
                "missing (required); this is not a pair file "
                "(source/*.json files hold English questions only)",
                line=position,
                field="transquestion",
            )
    return data


def read_pitfalls(path: str | Path, limit: int | None = None) -> ItemSet:
    """Read a `<Language>.json` pair file: two items per usable pair, English first.

    `limit` keeps the first N usable pairs (2N items). Malformed pairs (a missing field, a wrong
    type) raise InputError naming the 1-based position as the line; unscorable pairs are
    reported in ItemSet.invalid.
    """
    pairs = load_pairs(path)
    code = language_code(path)
    language = Path(path).stem
    items: list[MCItem] = []
    invalid: list[InvalidRecord] = []
    for index, pair in enumerate(pairs):
        if limit is not None and len(items) >= 2 * limit:
            break
        result = _pair_items(pair, path, index, language, code)
        if isinstance(result, InvalidRecord):
            invalid.append(result)
        else:
            items.extend(result)
    return ItemSet(name=language, format=FORMAT, items=items, invalid=invalid)


def side_item(
    fields: tuple[str, str, str], item_id: str, lang: str, question: str, choices: list[str], answer: int,
    **more: Any,
) -> MCItem | tuple[str | None, str]:
    """One side of a pair as an MCItem (`more`: its other fields), or (the field as the release names it, why it
    is no item): the rule of every multiple-choice item (an empty question, an option past the limits), which
    each reader of the release applies to both sides."""
    return mc_item_or_problem(
        {"id": item_id, "lang": lang, "kind": "question", "prompt": question, "options": choices, "answer": answer,
         **more},
        dict(zip(("prompt", "options", "answer"), fields, strict=True)),
    )


def _pair_items(
    pair: dict[str, Any], path: str | Path, index: int, language: str, code: str
) -> list[MCItem] | InvalidRecord:
    line = index + 1
    metadata = {key: pair[key] for key in METADATA_FIELDS if key in pair}
    values = [
        (
            require(pair, question_field, str, path, line),
            require_strings(pair, choices_field, path, line),
            require(pair, answer_field, str, path, line),
        )
        for question_field, choices_field, answer_field in SIDES
    ]
    items = []
    for lang, fields, (question, choices, answer) in zip(("en", code), SIDES, values, strict=True):
        _, choices_field, answer_field = fields
        if answer not in choices:
            reason = f"{answer_field} {answer!r} is not among the {len(choices)} {choices_field}"
            return InvalidRecord(path=str(path), line=line, field=answer_field, reason=reason)
        item = side_item(fields, f"{lang}:{index}", lang, question, choices, choices.index(answer),
                         source_lang="en", pair_id=f"{language}:{index}", metadata=dict(metadata))
        if not isinstance(item, MCItem):
            field, reason = item
            return InvalidRecord(path=str(path), line=line, field=field, reason=reason)
        items.append(item)
    (_, english, english_answer), (_, target, target_answer) = values
    flaws = pair_flaws(english, english_answer, target, target_answer)
    if flaws:  # each side is scorable, but the two are not the same question
        return InvalidRecord(path=str(path), line=line, field="transchoices", reason=flaw_reason(flaws),
                             item_id=f"{language}:{index}")
    return items
