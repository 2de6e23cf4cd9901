"""Bilingual pairs to evaluate, read from the release or from crossknow item files, with their flaws.

A pair is usable when its two sides are the same question (`crossknow.data.pair_rules`, the rule `evaluate`
applies too); a flawed pair is reported with every flaw it has, never scored. The cap of k pairs per original
question is checked per target language and reported (the release breaks it); it does not make a pair unusable.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from crossknow.data.formats import detect_format, load_item_set
from crossknow.data.jsonl import require, require_strings
from crossknow.data.pair_rules import FLAWS, flaw_reason, pair_flaws
from crossknow.data.pitfalls import SIDES, language_code, load_pairs, side_item
from crossknow.data.schemas import InvalidRecord, MCItem
from crossknow.errors import InputError
from crossknow.pitfalls.simulate import MCQuestion

ORIGIN_KEYS = ("source_id", "oriquestion")
"""Item metadata naming a pair's original English question (the first present is used): `source_id` for
crossknow's probe, `oriquestion` (the unperturbed English text) for the release."""


@dataclass(frozen=True)
class BilingualPair:
    """A usable pair: one question in English and in a target language, with one answer index."""

    pair_id: str
    english: MCQuestion
    target: MCQuestion
    origin: str | None
    """The original English question the pair was made from (the cap counts per origin); None if unknown."""
    source: str | None = None
    """The source data set (ai2_arc, mmlu, ...), when known."""
    category: str | None = None
    """The subject domain, when known."""


@dataclass
class PairFile:
    """The pairs of one file: the usable ones, the flawed ones reported, and the cap's violations."""

    path: Path
    pairs: list[BilingualPair]
    invalid: list[InvalidRecord]
    """One record per flawed pair, naming every flaw, or naming the side that is no multiple-choice item (an empty
    question: the rule of `evaluate`'s reader of the release too)."""
    flaw_counts: dict[str, int]
    """Pairs with each flaw (a pair with several flaws counts under each)."""
    cap_violations: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per target language: origin -> pairs, for every origin with more than k pairs."""
    n_read: int = 0
    """Pairs read (usable and flawed)."""


def cap_violations(origins: Sequence[tuple[str, str | None]], k: int) -> dict[str, dict[str, int]]:
    """Per language, the origins with more than `k` pairs, from (language, origin) of every pair read."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for lang, origin in origins:
        if origin is not None:
            counts[lang][origin] += 1
    return {lang: {o: n for o, n in c.items() if n > k} for lang, c in counts.items() if any(n > k for n in c.values())}


def read_pair_file(path: str | Path, limit: int | None = None, k: int = 3) -> PairFile:
    """The first `limit` pairs (all when None) of a release `<Language>.json` or a crossknow item file whose
    English and target items share a pair id; malformed input is an InputError naming file, line and field."""
    path = Path(path)
    if detect_format(path) == "pitfalls":
        return _release(path, limit, k)
    return _item_pairs(path, limit, k)


def _invalid(path: Path, line: int | None, pair_id: str, field_name: str, flaws: list[str]) -> InvalidRecord:
    return InvalidRecord(path=str(path), line=line, field=field_name, reason=flaw_reason(flaws), item_id=pair_id)


def _release(path: Path, limit: int | None, k: int) -> PairFile:
    code, language = language_code(path), path.stem
    records = load_pairs(path)[:limit]
    pairs, invalid, counts, origins = [], [], Counter(), []
    for index, record in enumerate(records):
        line, pair_id = index + 1, f"{language}:{index}"
        question, target_question = (require(record, name, str, path, line) for name in ("question", "transquestion"))
        choices, target_choices = (require_strings(record, name, path, line) for name in ("choices", "transchoices"))
        answer, target_answer = (require(record, name, str, path, line) for name in ("answer", "transanswer"))
        origin, source, category = (require(record, name, str, path, line, optional=True)
                                    for name in ("oriquestion", "source", "category"))
        origins.append((code, origin))
        flaws = pair_flaws(choices, answer, target_choices, target_answer)
        counts.update(flaws)
        if flaws:
            invalid.append(_invalid(path, line, pair_id, "transanswer" if "answer_missing" in flaws else "transchoices",
                                    flaws))
            continue
        index_en = choices.index(answer)
        sides = ((SIDES[0], "en", question, choices), (SIDES[1], code, target_question, target_choices))
        problems = [side_item(fields, f"{lang}:{index}", lang, text, side_choices, index_en)
                    for fields, lang, text, side_choices in sides]
        problem = next((found for found in problems if not isinstance(found, MCItem)), None)
        if problem is not None:
            invalid.append(InvalidRecord(path=str(path), line=line, field=problem[0], reason=problem[1],
                                         item_id=pair_id))
            continue
        pairs.append(BilingualPair(
            pair_id, MCQuestion(question, tuple(choices), index_en, "en"),
            MCQuestion(target_question, tuple(target_choices), index_en, code), origin, source, category))
    return PairFile(path, pairs, invalid, {c: counts[c] for c in FLAWS}, cap_violations(origins, k), len(records))


def _item_pairs(path: Path, limit: int | None, k: int) -> PairFile:
    item_set = load_item_set(path)
    grouped: dict[str, list[MCItem]] = {}
    for item in item_set.items:
        if not isinstance(item, MCItem):
            raise InputError(path, f"item {item.id!r} is an open question; pairs need multiple-choice items")
        if item.pair_id is None:
            raise InputError(path, f"item {item.id!r} has no pair_id", field="pair_id")
        grouped.setdefault(item.pair_id, []).append(item)
    pairs, invalid, counts, origins = [], list(item_set.invalid), Counter(), []
    for pair_id, items in list(grouped.items())[:limit]:
        english = [item for item in items if item.lang == "en"]
        if len(items) == 1:
            counts["missing_side"] += 1
            invalid.append(_invalid(path, None, pair_id, "pair_id", ["missing_side"]))
            continue
        if len(items) != 2 or len(english) != 1:
            raise InputError(path, f"pair {pair_id!r} has {len(items)} items ({', '.join(i.lang for i in items)}); "
                             "a pair is one English item and one target-language item", field="pair_id")
        en, target = english[0], next(item for item in items if item.lang != "en")
        origin = next((str(en.metadata[key]) for key in ORIGIN_KEYS if key in en.metadata), None)
        origins.append((target.lang, origin))
        flaws = pair_flaws(en.options, en.options[en.answer], target.options, target.options[target.answer])
        counts.update(flaws)
        if flaws:
            invalid.append(_invalid(path, None, pair_id, "options" if "choice_count" in flaws else "answer", flaws))
            continue
        pairs.append(BilingualPair(
            pair_id, MCQuestion(en.prompt, tuple(en.options), en.answer, "en"),
            MCQuestion(target.prompt, tuple(target.options), target.answer, target.lang), origin,
            _metadata_text(en, "source", path), _metadata_text(en, "category", path)))
    n_read = min(len(grouped), limit) if limit is not None else len(grouped)
    return PairFile(path, pairs, invalid, {c: counts[c] for c in FLAWS}, cap_violations(origins, k), n_read)


def _metadata_text(item: MCItem, key: str, path: Path) -> str | None:
    """`item.metadata[key]` when it is a string, None when missing; InputError naming the field otherwise."""
    value = item.metadata.get(key)
    if value is None or isinstance(value, str):
        return value
    raise InputError(path, f"expected a string, found {type(value).__name__} (item {item.id!r})",
                     field=f"metadata.{key}")
