"""mask, random, delete and reorder on real abstracts with the real embedded Gemma 3 tokenizer: distances measured
by a plain Levenshtein of the test's own, what each method may change, seeds, and the failures."""

from __future__ import annotations

from collections import Counter

import pytest
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import WhitespaceSplit
from transformers import PreTrainedTokenizerFast

from crossknow.data.corpus import Document
from crossknow.data.sequence_variants import SequenceVariant
from crossknow.perturb.records import PerturbationFailure
from crossknow.perturb.sampling import Source
from crossknow.perturb.token_level import TokenSettings, token_variants
from crossknow.perturb.tokenizers import ModelTokens, Vocabulary, special_ids

from .test_edits import plain_levenshtein

XS = [2, 4, 8, 16, 32]


def settings(model: ModelTokens, seed: int = 0, y: list[int] | None = None,
             vocabulary: Vocabulary | None = None) -> TokenSettings:
    own = Vocabulary(model.tokenizer, model.name, own=True)
    return TokenSettings(seed=seed, x=XS, y=y or [1, 4], vocabulary=vocabulary or own, dictionary=None,
                         stop_words=frozenset(), cross_lang="en")


def expected_target(n: int, x: int) -> int:
    """round-half-up(n * x / 100), in integers."""
    return (2 * n * x + 100) // 200


def made(source: Source, method: str, config: TokenSettings) -> list[SequenceVariant]:
    lines = list(token_variants(source, [method], config))
    assert all(isinstance(line, SequenceVariant) for line in lines), lines
    return lines  # type: ignore[return-value]


@pytest.mark.model  # the embedded checkpoint: its tokenizer or its weights
@pytest.mark.parametrize("which", ["ja_source", "en_source"])
def test_mask_replaces_exactly_the_target_with_unk(which: str, request: pytest.FixtureRequest) -> None:
    source: Source = request.getfixturevalue(which)
    unk = source.model.tokenizer.convert_tokens_to_ids("<unk>")
    n = len(source.ids)
    for variant in made(source, "mask", settings(source.model)):
        t = expected_target(n, variant.x)
        ids = variant.token_ids
        assert len(ids) == n
        assert sum(1 for a, b in zip(source.ids, ids, strict=True) if a != b) == t
        assert all(b == unk for a, b in zip(source.ids, ids, strict=True) if a != b)
        assert variant.edit_distance == plain_levenshtein(source.ids, ids) == t
        assert variant.text == source.model.tokenizer.decode(ids) and variant.text.count("<unk>") == t


def test_delete_removes_exactly_the_target(ja_source: Source) -> None:
    n = len(ja_source.ids)
    for variant in made(ja_source, "delete", settings(ja_source.model)):
        t = expected_target(n, variant.x)
        ids, k = variant.token_ids, 0
        assert len(ids) == n - t
        for token in ja_source.ids:  # the variant is a subsequence of the original
            if k < len(ids) and ids[k] == token:
                k += 1
        assert k == len(ids)
        assert variant.edit_distance == plain_levenshtein(ja_source.ids, ids) == t


def test_random_from_the_model_vocabulary(ja_source: Source) -> None:
    special = special_ids(ja_source.model.tokenizer)
    n = len(ja_source.ids)
    for variant in made(ja_source, "random", settings(ja_source.model)):
        ids = variant.token_ids
        assert len(ids) == n
        assert not special & {b for a, b in zip(ja_source.ids, ids, strict=True) if a != b}
        assert variant.edit_distance == plain_levenshtein(ja_source.ids, ids) == expected_target(n, variant.x)


def test_random_from_another_tokenizer_is_re_encoded_and_exact(ja_source: Source) -> None:
    words = ["酵素", "ネットワーク", "protein", "血糖値", "ミトコンドリア"]
    foreign = Tokenizer(WordLevel({"[UNK]": 0, **{w: k + 1 for k, w in enumerate(words)}}, unk_token="[UNK]"))
    foreign.pre_tokenizer = WhitespaceSplit()
    vocabulary = Vocabulary(PreTrainedTokenizerFast(tokenizer_object=foreign, unk_token="[UNK]"), "words", own=False)
    assert vocabulary.ids == [1, 2, 3, 4, 5]
    model = ja_source.model
    allowed = {tuple(model.tokenizer(w, add_special_tokens=False).input_ids) for w in words}
    assert max(len(ids) for ids in allowed) > 1  # some words are several Gemma tokens
    for variant in made(ja_source, "random", settings(model, vocabulary=vocabulary)):
        assert variant.edit_distance == plain_levenshtein(ja_source.ids, variant.token_ids)
        assert variant.edit_distance == expected_target(len(ja_source.ids), variant.x)
        # whatever was inserted is made of whole re-encoded words: remove them all and the original's tokens remain
        inserted = Counter(variant.token_ids) - Counter(ja_source.ids)
        assert set(inserted) <= {token for ids in allowed for token in ids}


def test_reorder_swaps_within_the_window(ja_source: Source) -> None:
    n = len(ja_source.ids)
    for variant in made(ja_source, "reorder", settings(ja_source.model, y=[1, 2, 4, 8, 16])):
        original, ids, window = ja_source.ids, variant.token_ids, variant.y
        t = expected_target(n, variant.x)
        assert sorted(ids) == sorted(original)
        assert variant.edit_distance == plain_levenshtein(original, ids)
        assert t <= variant.edit_distance <= t + 1
        for p in range(n):
            if ids[p] != original[p]:  # some partner q within the window gave p its token and took p's
                assert any(original[q] == ids[p] and ids[q] == original[p]
                           for q in range(max(0, p - window), min(n, p + window + 1))), (variant.id, p)


def test_the_same_seed_gives_the_same_variants_and_another_seed_others(ja_source: Source) -> None:
    methods = ["mask", "random", "delete", "reorder"]
    first = list(token_variants(ja_source, methods, settings(ja_source.model, seed=3)))
    again = list(token_variants(ja_source, methods, settings(ja_source.model, seed=3)))
    other = list(token_variants(ja_source, methods, settings(ja_source.model, seed=4)))
    assert [v.model_dump() for v in first] == [v.model_dump() for v in again]
    assert all(v.seed == 3 for v in first)
    different = [a.id for a, b in zip(first, other, strict=True) if a.token_ids != b.token_ids]
    assert len(different) >= len(first) - 2  # a 2% edit of one of 76 tokens might coincide; most cannot


def test_a_variant_does_not_depend_on_the_other_settings_asked(ja_source: Source) -> None:
    alone = TokenSettings(seed=0, x=[8], y=[4], vocabulary=None, dictionary=None, stop_words=frozenset(),
                          cross_lang="en")
    [mask8] = token_variants(ja_source, ["mask"], alone)
    every = {v.id: v for v in token_variants(ja_source, ["mask"], settings(ja_source.model))}
    assert every[mask8.id] == mask8


def test_too_short_and_too_wide_are_failures_naming_the_value(model_tokens: ModelTokens) -> None:
    source = Source(Document(id="short", lang="en", text="Short text here."), model_tokens)
    n = len(source.ids)
    assert n < 25
    lines = list(token_variants(source, ["mask", "reorder"], settings(model_tokens, y=[2, 16])))
    failures = {(f.method, f.x, f.y): f.reason for f in lines if isinstance(f, PerturbationFailure)}
    assert "X=2%" in failures[("mask", 2, None)] and "too short" in failures[("mask", 2, None)]
    assert failures[("reorder", 32, 16)] == f"window Y=16 is not smaller than the sequence ({n} tokens)"
    assert not any(isinstance(line, SequenceVariant) and line.x == 2 for line in lines)


def test_a_target_that_cannot_be_reached_is_a_failure(model_tokens: ModelTokens) -> None:
    text = "ha ha ha ha ha ha ha ha ha ha ha ha"  # 'ha' then eleven ' ha': one swap is all reorder can make
    source = Source(Document(id="same", lang="en", text=text), model_tokens)
    assert len(source.ids) == 12 and len(set(source.ids[1:])) == 1 and source.ids[0] != source.ids[1]
    config = TokenSettings(seed=0, x=[16, 32], y=[1], vocabulary=None, dictionary=None, stop_words=frozenset(),
                           cross_lang="en")
    reorder16, reorder32 = token_variants(source, ["reorder"], config)
    assert isinstance(reorder16, SequenceVariant) and reorder16.edit_distance == 2  # target round(1.92) = 2
    assert reorder32 == PerturbationFailure(
        source_id="same", method="reorder", x=32, y=1, a=None,
        reason="too few swappable pairs of different tokens: reached a token edit distance of 2, short of 4 "
        "(X=32% of 12 tokens)",
    )
