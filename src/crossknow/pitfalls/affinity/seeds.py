"""Seed pairs for the language-affinity expansion (section 3.3, Appendix B), sampled per seed language with a
recorded seed.

A seed is usable when it has none of the flaws of `crossknow.pitfalls.flaws` and its questions are exactly their
parts (`prequestion + oriquestion + sufquestion`, `transpre + transori + transsuf`), so that the original part and
the inserted text can be translated apart; an unusable pair is reported with its reasons, never sampled.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from crossknow.data.jsonl import require, require_strings
from crossknow.data.pair_rules import flaw_reason, pair_flaws
from crossknow.data.pitfalls import language_code, load_pairs
from crossknow.data.schemas import InvalidRecord
from crossknow.pitfalls.simulate import MCQuestion

PARTS_FLAW = "parts"
"""A question that is not the concatenation of its before, original and after parts."""


@dataclass(frozen=True)
class QuestionParts:
    """One side of a seed pair: inserted text before, the original question, inserted text after, the choices
    and the answer's text."""

    before: str
    original: str
    after: str
    choices: tuple[str, ...]
    answer: str


@dataclass(frozen=True)
class SeedPair:
    """A usable released pair, with both sides split into parts."""

    id: str
    """'<Language>:<0-based index in the release file>' (the pair id of `crossknow pitfalls eval`)."""
    lang: str
    """The seed language's code (the paper's y)."""
    english: MCQuestion
    """The perturbed English question as released."""
    target: MCQuestion
    """The perturbed seed-language question as released."""
    english_parts: QuestionParts
    target_parts: QuestionParts
    source: str | None
    category: str | None


@dataclass
class SeedFile:
    """The usable pairs of one release file and the reports of the others."""

    path: Path
    lang: str
    pairs: list[SeedPair]
    invalid: list[InvalidRecord]
    n_read: int


def read_seed_file(path: str | Path) -> SeedFile:
    """Every pair of a release `<Language>.json`: usable ones split into parts, the others reported; malformed
    input (a missing field, a wrong type) is an InputError naming the file, the position and the field."""
    path = Path(path)
    lang, language = language_code(path), path.stem
    records = load_pairs(path)
    pairs, invalid = [], []
    for index, record in enumerate(records):
        line, pair_id = index + 1, f"{language}:{index}"
        english = _parts(record, ("prequestion", "oriquestion", "sufquestion", "choices", "answer"), path, line)
        target = _parts(record, ("transpre", "transori", "transsuf", "transchoices", "transanswer"), path, line)
        question, target_question = (require(record, name, str, path, line) for name in ("question", "transquestion"))
        flaws = pair_flaws(english.choices, english.answer, target.choices, target.answer)
        reasons = [flaw_reason(flaws)] if flaws else []
        if question != english.before + english.original + english.after:
            reasons.append(f"{PARTS_FLAW}: question is not prequestion + oriquestion + sufquestion")
        if target_question != target.before + target.original + target.after:
            reasons.append(f"{PARTS_FLAW}: transquestion is not transpre + transori + transsuf")
        if reasons:
            invalid.append(InvalidRecord(path=str(path), line=line, field="transanswer" if flaws else "question",
                                         reason="; ".join(reasons), item_id=pair_id))
            continue
        answer = english.choices.index(english.answer)
        pairs.append(SeedPair(
            pair_id, lang, MCQuestion(question, english.choices, answer, "en"),
            MCQuestion(target_question, target.choices, answer, lang), english, target,
            record.get("source"), record.get("category")))
    return SeedFile(path, lang, pairs, invalid, len(records))


def sample_seeds(seed_file: SeedFile, per_seed: int, sample_seed: int) -> list[SeedPair]:
    """`per_seed` usable pairs drawn without replacement (all when fewer), in file order; the draw depends only
    on `sample_seed` and the seed language, so adding a seed file does not change another's sample."""
    if len(seed_file.pairs) <= per_seed:
        return list(seed_file.pairs)
    chosen = random.Random(f"{sample_seed}:{seed_file.lang}").sample(range(len(seed_file.pairs)), per_seed)
    return [seed_file.pairs[i] for i in sorted(chosen)]


def _parts(record: dict, names: tuple[str, str, str, str, str], path: Path, line: int) -> QuestionParts:
    before, original, after = (require(record, name, str, path, line) for name in names[:3])
    choices = tuple(require_strings(record, names[3], path, line))
    return QuestionParts(before, original, after, choices, require(record, names[4], str, path, line))
