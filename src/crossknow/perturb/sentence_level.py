"""Sentence-level perturbations (full paper, section 5.1.2): partial-a and the rewrites of X% of the sentences.

partial-a (crossknow's reading of "four segments"): four contiguous groups of sentences as equal as possible (a
sequence of fewer than four fails), or with --partial-unit tokens four runs of tokens. The rewrites replace
round-half-up(X%) of the sentences, at least one, drawn alike for the four patterns at one X (crossknow's choice).
Sentences are found in the text in order; where one is not verbatim, the sentences are joined as running text.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from crossknow.data.sentences import join_sentences, split_sentences
from crossknow.data.sequence_variants import PARTIAL_SEGMENTS, SequenceVariant, variant_label
from crossknow.perturb.edits import percent_count, token_edit_distance
from crossknow.perturb.records import PerturbationFailure
from crossknow.perturb.sampling import Source


@dataclass(frozen=True)
class Segmented:
    """A text as its sentences and what lies between them."""

    sentences: list[str]
    gaps: list[str] | None
    """Text before the first sentence, between each two, after the last (len(sentences) + 1); None when the
    sentences were not all found verbatim (then they are joined as running text)."""
    lang: str

    def text(self, replaced: dict[int, str] | None = None, first: int = 0, last: int | None = None) -> str:
        """Sentences first..last (default: all, with the text around them) with `replaced` ones swapped in."""
        replaced = replaced or {}
        last = len(self.sentences) - 1 if last is None else last
        whole = first == 0 and last == len(self.sentences) - 1
        chosen = [replaced.get(k, self.sentences[k]) for k in range(first, last + 1)]
        if self.gaps is None:
            return join_sentences(chosen, self.lang)
        parts = [self.gaps[first]] if whole else []
        for k, sentence in enumerate(chosen, start=first):
            parts.append(sentence)
            if k < last or whole:
                parts.append(self.gaps[k + 1])
        return "".join(parts)


def segment(text: str, lang: str) -> Segmented:
    """`text`'s sentences, located in it where they are found verbatim, in order."""
    sentences = split_sentences(text, lang)
    gaps, cursor = [], 0
    for sentence in sentences:
        start = text.find(sentence, cursor)
        if start < 0:
            return Segmented(sentences, None, lang)
        gaps.append(text[cursor:start])
        cursor = start + len(sentence)
    gaps.append(text[cursor:])
    return Segmented(sentences, gaps, lang)


def _groups(n: int, parts: int) -> list[tuple[int, int]]:
    """(first, last) of `parts` contiguous groups of n items, sizes as equal as possible, larger first."""
    size, extra = divmod(n, parts)
    bounds, start = [], 0
    for k in range(parts):
        end = start + size + (1 if k < extra else 0)
        bounds.append((start, end - 1))
        start = end
    return bounds


def _variant(source: Source, method: str, text: str, seed: int, *, x: int | None = None, a: int | None = None,
             token_ids: list[int] | None = None) -> SequenceVariant:
    ids = token_ids if token_ids is not None else source.model.sequence_ids(text)
    return SequenceVariant(
        id=f"{source.doc.id}:{variant_label(method, x, None, a)}", source_id=source.doc.id, lang=source.doc.lang,
        method=method, level="sentence", x=x, y=None, a=a, text=text, token_ids=token_ids,
        tokenizer=source.model.name, edit_distance=token_edit_distance(source.ids, ids), seed=seed,
    )


def partial_variants(
    source: Source, segmented: Segmented | None, unit: str, seed: int
) -> Iterator[SequenceVariant | PerturbationFailure]:
    """partial-1 .. partial-4 of one sequence (module docstring), or a failure for each; `segmented` is needed
    for the sentence unit only."""
    if unit == "sentences":
        assert segmented is not None  # the pipeline segments every sequence for the sentence unit
    count = len(segmented.sentences) if segmented is not None and unit == "sentences" else len(source.ids)
    if count < PARTIAL_SEGMENTS:
        what = "sentences" if unit == "sentences" else "tokens"
        for a in range(1, PARTIAL_SEGMENTS + 1):
            yield PerturbationFailure(source_id=source.doc.id, method="partial", x=None, y=None, a=a,
                                      reason=f"{count} {what}: fewer than the {PARTIAL_SEGMENTS} segments")
        return
    if segmented is not None and unit == "sentences":
        for a, (first, last) in enumerate(_groups(count, PARTIAL_SEGMENTS), start=1):
            yield _variant(source, "partial", segmented.text(first=first, last=last), seed, a=a)
        return
    bounds = [round(count * k / PARTIAL_SEGMENTS) for k in range(PARTIAL_SEGMENTS + 1)]
    for a in range(1, PARTIAL_SEGMENTS + 1):
        ids = source.ids[bounds[a - 1]:bounds[a]]
        yield _variant(source, "partial", source.model.decode(ids), seed, a=a, token_ids=ids)


def rewritten_sentences(source_id: str, n_sentences: int, x: int, seed: int) -> list[int] | None:
    """The indices of the sentences rewrite-X rewrites, ascending; None when X% of them rounds to none."""
    k = percent_count(n_sentences, x)
    if k < 1:
        return None
    return sorted(random.Random(f"{seed}|{source_id}|rewrite-{x}").sample(range(n_sentences), k))


@dataclass(frozen=True)
class RewriteResult:
    """The outcome of one sentence's rewrite in one pattern."""

    rewrite: str | None
    """The rewritten sentence; None when the generator gave no valid one."""
    error: str | None
    raw_output: str


def rewrite_variants(
    source: Source, segmented: Segmented, styles: list[str], sentence_x: list[int], seed: int,
    results: dict[tuple[str, int, str], RewriteResult],
) -> Iterator[SequenceVariant | PerturbationFailure]:
    """Every asked rewrite variant of one sequence, from `results` keyed by (source_id, sentence, style)."""
    source_id = source.doc.id
    for style in styles:
        for x in sentence_x:
            chosen = rewritten_sentences(source_id, len(segmented.sentences), x, seed)
            if chosen is None:
                yield PerturbationFailure(
                    source_id=source_id, method=style, x=x, y=None, a=None,
                    reason=f"X={x}% of {len(segmented.sentences)} sentences rounds to no sentence")
                continue
            outcomes = {k: results[(source_id, k, style)] for k in chosen}
            bad = next(((k, o) for k, o in outcomes.items() if o.rewrite is None), None)
            if bad is not None:
                yield PerturbationFailure(
                    source_id=source_id, method=style, x=x, y=None, a=None, raw_output=bad[1].raw_output,
                    reason=f"sentence {bad[0] + 1} has no valid {style} rewrite: {bad[1].error}")
                continue
            replaced = {k: o.rewrite for k, o in outcomes.items() if o.rewrite is not None}
            yield _variant(source, style, segmented.text(replaced), seed, x=x)
