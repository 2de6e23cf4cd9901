"""Token-level perturbations (full paper, section 5.1.1), made on the model's token ids of each sequence.

mask-X (the tokenizer's <unk>), random-X, delete-X, reorder-X@Y (a swap with a partner at most Y positions away,
each token in at most one swap) and monosyn-X / mltsyn-X apply seeded candidate edits until the measured distance
reaches round-half-up(n * X / 100) (`crossknow.perturb.edits`). Each variant draws from its own stream,
`random.Random(f"{seed}|{source_id}|{label}")`, so it never depends on which others were asked for.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from crossknow.data.sequence_variants import SequenceVariant, variant_label
from crossknow.data.sudachi import Morpheme
from crossknow.perturb.edits import Edit, percent_count, reach_distance
from crossknow.perturb.records import SYNONYM_METHODS, PerturbationFailure
from crossknow.perturb.sampling import Source
from crossknow.perturb.synonym_dictionary import SynonymDictionary
from crossknow.perturb.synonyms import candidate_words, synonym_edits
from crossknow.perturb.tokenizers import Vocabulary

TOLERANCE = {"mask": 0, "random": 0, "delete": 0, "reorder": 1, "monosyn": 1, "mltsyn": 1}
"""How far above the target each method's distance may end: a swap or a word changes more than one token."""
MAX_DRAWS = 100
"""random-X: draws per position before the position is given up (only a foreign vocabulary rejects draws)."""
EDITED = {"mask": "maskable tokens", "random": "replaceable tokens", "delete": "tokens", "reorder":
          "swappable pairs of different tokens", "monosyn": "words with synonyms", "mltsyn": "words with synonyms"}
"""What a method runs out of when a sequence cannot reach its target."""


@dataclass(frozen=True)
class TokenSettings:
    """What the token-level perturbations of a run share."""

    seed: int
    x: list[int]
    y: list[int]
    vocabulary: Vocabulary | None
    """random-X's source (None when random is not asked for)."""
    dictionary: SynonymDictionary | None
    stop_words: frozenset[str]
    cross_lang: str
    """mltsyn's synonym language."""


def variant_rng(seed: int, source_id: str, label: str) -> random.Random:
    """The random stream of one variant."""
    return random.Random(f"{seed}|{source_id}|{label}")


def _order(n: int, rng: random.Random) -> list[int]:
    return rng.sample(range(n), n)


def mask_edits(ids: list[int], rng: random.Random, mask_id: int) -> list[Edit]:
    """Every position not already the mask token, in `rng`'s order, masked."""
    return [Edit({p: (mask_id,)}, 1) for p in _order(len(ids), rng) if ids[p] != mask_id]


def delete_edits(ids: list[int], rng: random.Random) -> list[Edit]:
    """Every position, in `rng`'s order, deleted."""
    return [Edit({p: ()}, 1) for p in _order(len(ids), rng)]


def random_edits(source: Source, rng: random.Random, vocabulary: Vocabulary) -> list[Edit]:
    """Every position, in `rng`'s order, replaced by its first usable draw that differs from it."""
    edits = []
    for p in _order(len(source.ids), rng):
        for _ in range(MAX_DRAWS):
            drawn = vocabulary.draw(rng, source.model)
            if drawn is not None and drawn != (source.ids[p],):
                edits.append(Edit({p: drawn}, max(1, len(drawn))))
                break
    return edits


def reorder_edits(ids: list[int], rng: random.Random, window: int) -> list[Edit]:
    """Per position, in `rng`'s order, a swap with a partner drawn within `window` positions (skipped when the
    two tokens are the same)."""
    edits = []
    n = len(ids)
    for p in _order(n, rng):
        partners = [q for q in range(max(0, p - window), min(n, p + window + 1)) if q != p]
        q = rng.choice(partners)
        if ids[p] != ids[q]:
            edits.append(Edit({p: (ids[q],), q: (ids[p],)}, 2))
    return edits


def _candidates(method: str, source: Source, rng: random.Random, y: int | None, settings: TokenSettings,
                words: list[Morpheme]) -> list[Edit]:
    ids = source.ids
    if method == "mask":
        return mask_edits(ids, rng, source.model.mask_id)
    if method == "delete":
        return delete_edits(ids, rng)
    if method == "random":
        assert settings.vocabulary is not None  # the pipeline loads it when random is asked for
        return random_edits(source, rng, settings.vocabulary)
    if method == "reorder":
        assert y is not None
        return reorder_edits(ids, rng, y)
    assert settings.dictionary is not None  # the config requires --synonyms for monosyn and mltsyn
    synonym_lang = source.doc.lang if method == "monosyn" else settings.cross_lang
    return synonym_edits(source, words, settings.dictionary, synonym_lang, rng)


def _one(method: str, source: Source, x: int, y: int | None, settings: TokenSettings,
         words: list[Morpheme]) -> SequenceVariant | PerturbationFailure:
    n, label = len(source.ids), variant_label(method, x, y)

    def failure(reason: str) -> PerturbationFailure:
        return PerturbationFailure(source_id=source.doc.id, method=method, x=x, y=y, a=None, reason=reason)

    target = percent_count(n, x)
    if target < 1:
        return failure(f"X={x}% of {n} tokens rounds to no edit: the sequence is too short")
    if y is not None and y >= n:
        return failure(f"window Y={y} is not smaller than the sequence ({n} tokens)")
    rng = variant_rng(settings.seed, source.doc.id, label)
    reached = reach_distance(source.ids, _candidates(method, source, rng, y, settings, words), target,
                             TOLERANCE[method])
    if reached.distance < target:
        return failure(f"too few {EDITED[method]}: reached a token edit distance of {reached.distance}, short of "
                       f"{target} (X={x}% of {n} tokens)")
    return SequenceVariant(
        id=f"{source.doc.id}:{label}", source_id=source.doc.id, lang=source.doc.lang, method=method, level="token",
        x=x, y=y, a=None, text=source.model.decode(reached.ids), token_ids=reached.ids, tokenizer=source.model.name,
        edit_distance=reached.distance, seed=settings.seed,
    )


def original_variant(source: Source, seed: int) -> SequenceVariant:
    """The sequence itself (method 'original'), scored from its text: the reference, at distance 0."""
    return SequenceVariant(
        id=f"{source.doc.id}:original", source_id=source.doc.id, lang=source.doc.lang, method="original",
        level="none", x=None, y=None, a=None, text=source.doc.text, token_ids=None, tokenizer=source.model.name,
        edit_distance=0, seed=seed,
    )


def token_variants(
    source: Source, methods: list[str], settings: TokenSettings
) -> Iterator[SequenceVariant | PerturbationFailure]:
    """Every asked token-level variant of one sequence (X ascending; reorder: every X for each Y), or the
    failure that stands for it."""
    words = (candidate_words(source.doc.text, settings.stop_words)
             if any(m in SYNONYM_METHODS for m in methods) else [])
    for method in methods:
        windows: list[int | None] = list(settings.y) if method == "reorder" else [None]
        for y in windows:
            for x in settings.x:
                yield _one(method, source, x, y, settings, words)
