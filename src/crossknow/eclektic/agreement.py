"""Agreement between judges: Cohen's kappa (two raters) and Fleiss' kappa (two or more); None is a missing rating.

Cohen (1960) leaves out the items that either rater left unrated. Fleiss (1971) with missing ratings, crossknow's
choice: an item keeps its valid ratings when it has at least two (else it is left out), and its agreement is taken
over its own n_i raters, P_i = sum_c n_ic (n_ic - 1) / (n_i (n_i - 1)); with none missing, Fleiss' formula exactly.
Kappa is undefined (None) when no item is left or p_e = 1. The formulas: docs/eclektic.md.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, Literal

import pyarrow as pa
from pydantic import Field

from crossknow.data.schemas import Record

Rating = Hashable | None


class Agreement(Record):
    """The judges' agreement on one judgements table."""

    method: Literal["cohen", "fleiss"] = Field(description="Cohen's kappa for two judges, Fleiss' for more.")
    kappa: float | None = Field(description="The kappa; null when undefined (no item, or one category only).")
    n_judges: int = Field(description="Judges compared.")
    n_items: int = Field(description="Items (q_id, lang, sample) whose ratings entered the kappa.")
    n_left_out: int = Field(description="Items left out for missing ratings (see the module docstring).")


def cohen_kappa(first: Sequence[Rating], second: Sequence[Rating]) -> float | None:
    """Cohen's kappa of two raters' ratings of the same items (in the same order); items that
    either left unrated (None) are left out."""
    if len(first) != len(second):
        raise ValueError(f"the raters rated {len(first)} and {len(second)} items")
    pairs = [(a, b) for a, b in zip(first, second, strict=True) if a is not None and b is not None]
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(a == b for a, b in pairs) / n
    left, right = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(left[c] * right[c] for c in left) / n**2
    return None if expected == 1 else (observed - expected) / (1 - expected)


def fleiss_kappa(ratings: Sequence[Sequence[Rating]]) -> float | None:
    """Fleiss' kappa; `ratings[i]` holds item i's ratings, one per rater (None = missing). Items with
    fewer than two ratings are left out (module docstring)."""
    items = [Counter(r for r in item if r is not None) for item in ratings]
    items = [counts for counts in items if counts.total() >= 2]
    if not items:
        return None
    agreement = sum(
        sum(k * (k - 1) for k in counts.values()) / (counts.total() * (counts.total() - 1)) for counts in items
    ) / len(items)
    totals: Counter[Hashable] = sum(items, Counter())
    expected = sum((k / totals.total()) ** 2 for k in totals.values())
    return None if expected == 1 else (agreement - expected) / (1 - expected)


def judge_agreement(judgements: pa.Table | Iterable[Mapping[str, Any]]) -> Agreement:
    """The agreement of the judges of a judgements table (columns q_id, lang, sample, judge,
    verdict): Cohen's kappa for two judges, Fleiss' for more. ValueError for fewer than two judges."""
    rows = judgements.to_pylist() if isinstance(judgements, pa.Table) else judgements
    by_item: dict[tuple[str, str, int], dict[str, Rating]] = defaultdict(dict)
    for row in rows:
        by_item[(str(row["q_id"]), row["lang"], row.get("sample") or 0)][row["judge"]] = row["verdict"]
    judges = sorted({judge for verdicts in by_item.values() for judge in verdicts})
    if len(judges) < 2:
        raise ValueError(f"agreement needs at least two judges, found {judges}")
    table = [[verdicts.get(judge) for judge in judges] for verdicts in by_item.values()]
    if len(judges) == 2:
        used = sum(a is not None and b is not None for a, b in table)
        kappa = cohen_kappa([a for a, _ in table], [b for _, b in table])
        method: Literal["cohen", "fleiss"] = "cohen"
    else:
        used = sum(sum(r is not None for r in item) >= 2 for item in table)
        kappa = fleiss_kappa(table)
        method = "fleiss"
    return Agreement(method=method, kappa=kappa, n_judges=len(judges), n_items=used, n_left_out=len(table) - used)
