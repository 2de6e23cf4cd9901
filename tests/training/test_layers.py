"""Which parameters train, on the real embedded model (Gemma 3 270M: 18 decoder blocks, tied embeddings)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from crossknow.errors import CrossknowError
from crossknow.training.layers import select_trainable


@pytest.fixture(scope="module")
def model(embedded_checkpoint_dir: Path) -> Any:
    """The embedded model, loaded from its plain checkpoint (a private copy: these tests freeze parameters)."""
    torch = pytest.importorskip("torch")
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(embedded_checkpoint_dir, dtype=torch.float32)


@pytest.fixture()
def fresh(model: Any) -> Any:
    """`model` with every parameter trainable again, as from_pretrained returns it."""
    for parameter in model.parameters():
        parameter.requires_grad_(True)
    return model


def trainable_names(model: Any) -> set[str]:
    """Names of the parameters that require gradients."""
    return {name for name, parameter in model.named_parameters() if parameter.requires_grad}


def numel(model: Any, names: set[str]) -> int:
    """Parameter count of the named parameters."""
    return sum(parameter.numel() for name, parameter in model.named_parameters() if name in names)


def test_the_model_is_what_these_tests_assume(fresh: Any) -> None:
    assert fresh.config.num_hidden_layers == 18
    assert fresh.config.tie_word_embeddings
    assert fresh.get_output_embeddings().weight is fresh.get_input_embeddings().weight


@pytest.mark.parametrize("count", [1, 2])
def test_last_n_trains_the_last_n_blocks_and_the_final_norm(fresh: Any, count: int) -> None:
    blocks = fresh.config.num_hidden_layers
    prefixes = tuple(f"model.layers.{index}." for index in range(blocks - count, blocks)) + ("model.norm.",)
    expected = {name for name, _ in fresh.named_parameters() if name.startswith(prefixes)}
    assert len(expected) == 13 * count + 1  # 13 tensors per Gemma 3 block, and the norm's weight

    trainable, total = select_trainable(fresh, f"last:{count}")

    assert trainable_names(fresh) == expected
    assert trainable == numel(fresh, expected)
    assert total == sum(p.numel() for p in fresh.parameters()) == 268_098_176


def test_blocks_trains_every_block_but_no_embedding(fresh: Any) -> None:
    trainable, total = select_trainable(fresh, "blocks")
    names = trainable_names(fresh)
    everything = {name for name, _ in fresh.named_parameters()}
    assert everything - names == {"model.embed_tokens.weight"}  # the tied output head is the same tensor
    assert not fresh.get_output_embeddings().weight.requires_grad
    embedding = fresh.get_input_embeddings().weight.numel()
    assert trainable == total - embedding
    assert embedding == 262_144 * 640


def test_all_trains_everything(fresh: Any) -> None:
    trainable, total = select_trainable(fresh, "all")
    assert trainable == total == sum(p.numel() for p in fresh.parameters())


@pytest.mark.parametrize("spec", ["last:0", "last:19", "last:", "last:-1", "first:2", "LAST:1", "", "blocks "])
def test_bad_specs_are_errors_that_name_the_option(fresh: Any, spec: str) -> None:
    with pytest.raises(CrossknowError, match="--train-layers"):
        select_trainable(fresh, spec)


def test_a_model_without_decoder_blocks_is_an_error_for_partial_specs() -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(CrossknowError, match="Linear: cannot find the decoder blocks"):
        select_trainable(torch.nn.Linear(2, 2), "last:1")
    assert select_trainable(torch.nn.Linear(2, 2), "all") == (6, 6)
