"""The boundary rule with the real Gemma tokenizer."""

from __future__ import annotations

import pytest

from crossknow.errors import UnscorableRequest
from crossknow.models.boundary import continuation_start, encode_pair, move_trailing_spaces, move_trailing_whitespace
from crossknow.models.protocol import ScoreRequest


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
    with pytest.raises(UnscorableRequest, match="no tokens"):
        encode_pair(lambda text: [1, 7], "abc", "\u200b")  # a toy encoder that drops the zero-width space


# A real merge with the embedded Gemma 3 tokenizer: alone, the context ends in the token '値'; in the
# whole text '値を' is one token, so whole[:len(ctx)] != ctx and no run of tokens is the continuation.
MERGE_CONTEXT, MERGE_CONTINUATION = "インスリンは血糖値", "を下げるホルモンである。"


def test_a_real_merge_across_the_boundary_is_unscorable(embedded_scorer):
    tokenizer = embedded_scorer.tokenizer

    def encode(text):
        return tokenizer(text).input_ids

    ctx, whole = encode(MERGE_CONTEXT), encode(MERGE_CONTEXT + MERGE_CONTINUATION)
    assert tokenizer.convert_ids_to_tokens(ctx)[-1] == "値"
    assert "値を" in tokenizer.convert_ids_to_tokens(whole)
    # lm-evaluation-harness's whole[len(ctx):] would score '下げる...' plus a shifted token: not the text
    assert tokenizer.decode(ctx + whole[len(ctx):]) != tokenizer.decode(whole)
    with pytest.raises(UnscorableRequest, match="merges the end of the context") as error:
        encode_pair(encode, MERGE_CONTEXT, MERGE_CONTINUATION)
    assert "血糖値" in str(error.value) and "を下げる" in str(error.value)


def test_the_hf_scorer_names_the_merged_request(embedded_scorer):
    requests = [ScoreRequest("日本の首都は", "東京です。"), ScoreRequest(MERGE_CONTEXT, MERGE_CONTINUATION)]
    with pytest.raises(UnscorableRequest, match="merges") as error:
        embedded_scorer.score(requests)
    assert error.value.index == 1
    assert embedded_scorer.score(requests[:1])[0].n_tokens > 0  # its neighbour is scorable


def test_continuation_start_from_server_offsets():
    prompt, tokens = "The capital of France", ["The", " capital", " of", " France"]
    offsets = [0, 3, 11, 14]
    assert continuation_start(offsets, tokens, "The capital", prompt) == 2
    assert continuation_start(offsets, tokens, "", prompt) == 0
    with pytest.raises(UnscorableRequest, match="merges.*' France'"):
        continuation_start(offsets, tokens, "The capital of Fr", prompt)
    with pytest.raises(UnscorableRequest, match="no tokens"):
        continuation_start(offsets, tokens, prompt, prompt + "")


def test_the_literal_boundary_keeps_the_space_token_and_drops_the_first_word(embedded_scorer):
    """The AdaXEval authors' tokenisation: the context keeps its trailing space as a token of its own and the
    continuation is whole[len(ctx):], which starts one token late ('▁Paris' goes; ', a city.' is scored)."""
    tokenizer = embedded_scorer.tokenizer

    def encode(text):
        return tokenizer(text).input_ids

    ctx, cont = encode_pair(encode, "The capital of France is ", "Paris, a city.", "literal")
    assert tokenizer.convert_ids_to_tokens(ctx)[-2:] == ["▁is", "▁"]
    assert tokenizer.decode(cont) == ", a city."
    assert ctx + cont != encode("The capital of France is Paris, a city.")  # not the text's own tokens


def test_the_literal_boundary_lets_a_merge_through_and_refuses_an_empty_continuation(embedded_scorer):
    tokenizer = embedded_scorer.tokenizer

    def encode(text):
        return tokenizer(text).input_ids

    ctx, cont = encode_pair(encode, MERGE_CONTEXT, MERGE_CONTINUATION, "literal")  # no check, as the authors'
    assert ctx == encode(MERGE_CONTEXT) and cont == encode(MERGE_CONTEXT + MERGE_CONTINUATION)[len(ctx):]
    with pytest.raises(UnscorableRequest, match="literal boundary"):
        encode_pair(encode, "Blood sugar is lowered by ", "insulin", "literal")  # its one token is dropped
    with pytest.raises(ValueError, match="unknown boundary"):
        encode_pair(encode, "a", "b", "shifted")  # type: ignore[arg-type]


def test_the_hf_scorer_applies_each_requests_boundary(embedded_scorer):
    moved, literal = embedded_scorer.score([ScoreRequest("The capital of France is ", "Paris, a city."),
                                            ScoreRequest("The capital of France is ", "Paris, a city.", "literal")])
    assert (moved.n_tokens, literal.n_tokens) == (5, 4)
