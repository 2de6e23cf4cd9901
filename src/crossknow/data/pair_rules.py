"""The one rule for a usable bilingual pair: its two sides are the same multiple-choice question.

Both readers of the Cross-Lingual Pitfalls release (`crossknow.data.pitfalls.read_pitfalls`, the items that
`evaluate` scores, and `crossknow.pitfalls.flaws.read_pair_file`, the pairs of `pitfalls eval`) and every
check of a generated pair apply `pair_flaws`, so that one file gives one set of usable pairs everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence

FLAWS: dict[str, str] = {
    "choice_count": "the two sides have different numbers of choices",
    "answer_missing": "an answer is not among its side's choices",
    "answer_index": "the answer's index is not the same on both sides",
    "empty_choice": "a choice is empty",
    "duplicate_choice": "a side holds the same choice twice",
    "missing_side": "one side of the pair is missing from the file or unreadable (see the other invalid records)",
}
"""Every flaw that makes a pair unusable, by code; the first four are the release's pair flaws, `duplicate_choice` the
rule of every multiple-choice record (`crossknow.data.schemas.check_choices`), `missing_side` occurs in item files
only."""


def pair_flaws(english: Sequence[str], english_answer: str, target: Sequence[str], target_answer: str) -> list[str]:
    """The codes of `FLAWS` that a pair has, from its choices and answers as text."""
    flaws = []
    if len(english) != len(target):
        flaws.append("choice_count")
    if english_answer not in english or target_answer not in target:
        flaws.append("answer_missing")
    elif [i for i, choice in enumerate(target) if choice == target_answer] != [list(english).index(english_answer)]:
        flaws.append("answer_index")
    if any(not choice.strip() for choice in (*english, *target)):
        flaws.append("empty_choice")
    if len(set(english)) != len(english) or len(set(target)) != len(target):
        flaws.append("duplicate_choice")
    return flaws


def flaw_reason(flaws: Sequence[str]) -> str:
    """The reason an invalid record gives for a pair's flaws: 'code: description' for each, joined by '; '."""
    return "; ".join(f"{code}: {FLAWS[code]}" for code in flaws)
