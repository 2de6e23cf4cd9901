"""The boundary rule with the real Gemma tokenizer."""

from __future__ import annotations

import pytest

from crossknow.models.boundary import encode_pair, move_trailing_spaces, move_trailing_whitespace


def test_moves_only_spaces_or_all_whitespace():
    assert move_trailing_spaces("is  ", "Paris") == ("is", "  Paris")
    assert move_trailing_spaces("Q?\n", "A") == ("Q?\n", "A")
    assert move_trailing_whitespace("Answer: \n", "A") == ("Answer:", " \nA")


def test_a_trailing_space_would_drop_the_first_token_without_the_move(embedded_scorer):
    """DESIGN.md: with Gemma's tokenizer a context ending in a space encodes the space as its own
    token; the naive split then silently loses the continuation's first token."""
    tokenizer = embedded_scorer.tokenizer

    def encode(text):
        return tokenizer(text).input_ids

    context, continuation = "The capital of France is ", "Paris, a city."
    naive_ctx = encode(context)
    naive_cont = encode(context + continuation)[len(naive_ctx):]
    ctx, cont = encode_pair(encode, context, continuation)
    assert tokenizer.decode(cont) == " Paris, a city."
    assert tokenizer.decode(naive_cont) != " Paris, a city."
    assert len(naive_cont) < len(cont)
    assert ctx == encode("The capital of France is")


def test_empty_context_is_bos_only(embedded_scorer):
    tokenizer = embedded_scorer.tokenizer
    ctx, cont = encode_pair(lambda text: tokenizer(text).input_ids, "", "Hello")
    assert ctx == [tokenizer.bos_token_id]
    assert tokenizer.decode(cont) == "Hello"


def test_a_continuation_without_tokens_of_its_own_is_an_error():
    with pytest.raises(ValueError, match="no tokens"):
        encode_pair(lambda text: [1, len(text)], "abc", "d")  # a toy encoder: always two tokens
