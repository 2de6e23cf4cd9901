"""The FLOP accounting of bench/pipeline_bench.py: the model's shapes against its real weights, and the
work counts on small hand-checked items."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from flop_counts import ItemTokens, ModelShapes, item_tokens, lm_eval_work, necessary_work  # noqa: E402

TINY = ModelShapes(hidden=4, layers=2, heads=2, kv_heads=1, head_dim=2, intermediate=8, vocab=10, windows=(2, None))


def test_shapes_match_the_embedded_checkpoints_weights(embedded_checkpoint_dir):
    from safetensors import safe_open

    shapes = ModelShapes.from_model_dir(embedded_checkpoint_dir)
    matrices, embedding = 0, None
    for file in sorted(Path(embedded_checkpoint_dir).glob("*.safetensors")):
        with safe_open(str(file), framework="pt") as weights:
            for name in weights.keys():
                shape = weights.get_slice(name).get_shape()
                if name.endswith("embed_tokens.weight"):
                    embedding = tuple(shape)
                elif len(shape) == 2:
                    matrices += shape[0] * shape[1]
    assert matrices == shapes.body_params_per_token()
    assert embedding == (shapes.vocab, shapes.hidden)
    assert shapes.windows.count(None) == shapes.layers // 6  # Gemma 3: one global layer in six


def test_attention_is_causal_and_capped_by_the_window():
    per_key = 4 * TINY.heads * TINY.head_dim
    assert TINY.attention_flops(0) == per_key * (1 + 1)
    assert TINY.attention_flops(4) == per_key * (2 + 5)  # the sliding layer sees 2 keys, the global one 5


def test_necessary_work_shares_the_context_and_skips_last_inputs():
    item = ItemTokens(context=(1, 2, 3), continuations=((4, 5), (6,)))
    work = necessary_work(TINY, [item])
    assert work.body_tokens == 3 + 1 + 0
    assert work.projected_positions == 2 + 1
    assert work.body_flops == 4 * TINY.body_flops_per_token()
    assert work.attention_flops == sum(TINY.attention_flops(p) for p in (0, 1, 2, 3))
    assert work.projection_flops == 3 * 2 * TINY.hidden * TINY.vocab
    assert work.total == work.body_flops + work.attention_flops + work.projection_flops


def test_lm_eval_work_pads_batches_and_projects_everywhere():
    items = [
        ItemTokens(context=(1, 2, 3), continuations=((4, 5), (6,))),  # rows of 4 and 3 inputs
        ItemTokens(context=(7,), continuations=((8, 9), (8, 0))),  # equal but for the last token: one row
    ]
    unbatched = lm_eval_work(TINY, items, batch_size=1)
    assert unbatched.body_tokens == unbatched.projected_positions == 4 + 3 + 2
    batched = lm_eval_work(TINY, items, batch_size=2)  # [4, 3] padded to 4, then [2]
    assert batched.body_tokens == batched.projected_positions == 2 * 4 + 2
    assert batched.attention_flops == 2 * sum(TINY.attention_flops(p) for p in range(4)) + sum(
        TINY.attention_flops(p) for p in range(2)
    )


def test_item_tokens_split_at_the_context_tokens():
    def encode(text: str) -> list[int]:
        return [0] + [ord(char) for char in text]  # BOS, then one token a character

    tokens = item_tokens(encode, [("ab", " c"), ("ab", "d")])
    assert tokens == ItemTokens(context=(0, 97, 98), continuations=((32, 99), (100,)))
    with pytest.raises(ValueError, match="share one context"):
        item_tokens(encode, [("ab", "c"), ("x", "d")])
