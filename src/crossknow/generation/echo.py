"""Whether a model's output repeats an example output of its few-shot prompt (a "shot echo"), by crossknow's rule.

A base model asked by a few-shot prompt sometimes continues with an example instead of answering its own input. An
output echoes an example when it is that example's output as a whole or, where the caller allows it, shares with it
a run of at least `ECHO_SPAN` characters that no prompt input holds; only outputs count, never an example's inputs.
Texts are compared folded (`folded`: NFKC, case folded, each run of non-alphanumerics as one space).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

ECHO_SPAN = 24
"""The shortest run of characters (folded) an output must share with an example's output, where no input holds it,
to echo it without being it (crossknow's choice, about five English words). Shorter runs are a good output's terms
or common phrases: a good distraction shared "oxygen" (6 characters) with an example, a good translation 水の沸点
(4), and "the boiling point of" is 20."""

_NOT_WORD = re.compile(r"[\W_]+")


def folded(text: str) -> str:
    """`text` as compared here: NFKC, case folded, each run of characters other than letters and digits one space,
    stripped."""
    return _NOT_WORD.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def holds(text: str, part: str) -> bool:
    """True when folded `text` contains folded `part` (which is not empty)."""
    needle = folded(part)
    return bool(needle) and needle in folded(text)


def _parts(output: str | Sequence[str]) -> tuple[str, ...]:
    """An output as its folded parts, sorted (a str is one part; a list of options is compared in any order)."""
    parts = (output,) if isinstance(output, str) else tuple(output)
    return tuple(sorted(folded(part) for part in parts))


def _runs(text: str, span: int) -> set[str]:
    """Every run of `span` characters of folded `text`."""
    return {text[i : i + span] for i in range(len(text) - span + 1)}


def echoed_example(
    output: str | Sequence[str], examples: Iterable[str | Sequence[str]], sources: Sequence[str] = (),
    span: int | None = ECHO_SPAN,
) -> str | None:
    """The example output (its parts joined by ', ') that `output` repeats, else None.

    Whole: `output` is an example's output, folded; an output of several parts (the options of one answer) is
    compared with an example of as many parts, in any order. An example every part of which one of `sources` (the
    prompt's inputs) holds is no echo: the output may repeat its own input. Long run (with `span`, one-part outputs
    only): `output` shares with an example a run of `span` characters that no source holds. With `span` None, whole
    outputs only: a word inside an example's longer output ("iron" of "cast iron") is no echo."""
    mine = _parts(output)
    if not any(mine):
        return None
    given = [folded(source) for source in sources]
    for example in examples:
        theirs, named = _parts(example), example if isinstance(example, str) else ", ".join(example)
        if mine == theirs and not all(any(part in source for source in given) for part in theirs):
            return named
        if span and len(mine) == len(theirs) == 1:
            shared = _runs(mine[0], span) & _runs(theirs[0], span)
            if any(all(run not in source for source in given) for run in shared):
                return named
    return None
