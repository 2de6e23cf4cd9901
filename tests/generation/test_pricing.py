"""The price table: built-in prices, local backends, dated ids, user files and their errors."""

from __future__ import annotations

import logging

import pytest

from crossknow.errors import InputError
from crossknow.generation.pricing import ModelPrice, PriceTable
from crossknow.models.generator import Usage


def test_builtin_prices_and_cost():
    table = PriceTable()
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=500_000)
    assert table.cost("openai", "gpt-4.1", usage) == pytest.approx(2.00 + 4.00)
    assert table.cost("openai", "gpt-4o-mini", Usage(1000, 1000)) == pytest.approx((1000 * 0.15 + 1000 * 0.60) / 1e6)
    assert table.price("openai", "gpt-4.1-2025-04-14") == table.prices["gpt-4.1"]  # dated snapshot
    assert table.price("openai", "openai/gpt-4o") == table.prices["gpt-4o"]
    for backend in ("default", "hf", "gguf"):
        assert table.cost(backend, "anything", usage) == 0.0


def test_unknown_model_costs_zero_and_warns_once(caplog):
    table = PriceTable()
    with caplog.at_level(logging.WARNING, logger="crossknow.generation.pricing"):
        assert table.cost("openai", "Qwen/Qwen3-32B", Usage(100, 100)) == 0.0
        assert table.cost("openai", "Qwen/Qwen3-32B", Usage(100, 100)) == 0.0
    assert len([r for r in caplog.records if "no price" in r.getMessage()]) == 1


def test_file_extends_and_overrides(tmp_path):
    yaml_file = tmp_path / "prices.yaml"
    yaml_file.write_text("gpt-4.1: {prompt: 1.0, completion: 4.0}\nmy-model:\n  prompt: 0.5\n  completion: 0.5\n")
    table = PriceTable.load(yaml_file)
    assert table.prices["gpt-4.1"] == ModelPrice(prompt=1.0, completion=4.0)
    assert table.cost("openai", "my-model", Usage(2_000_000, 0)) == pytest.approx(1.0)
    assert table.prices["gpt-4o"] == ModelPrice(prompt=2.5, completion=10.0)  # the rest stays
    json_file = tmp_path / "prices.json"
    json_file.write_text('{"local-llama": {"prompt": 0, "completion": 0}}')
    assert PriceTable.load(json_file).cost("openai", "local-llama", Usage(10, 10)) == 0.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gpt-4.1: {prompt: -1, completion: 4}", r"field 'gpt-4.1': prompt: Input should be greater than or equal"),
        ("gpt-4.1: {prompt: 1, completion: 4, cached: 0.5}", r"field 'gpt-4.1': cached: Extra inputs"),
        ("gpt-4.1: {prompt: 1}", r"completion: Field required"),
        ("- gpt-4.1", r"expected a mapping"),
        ("gpt-4.1: {prompt: [", r"not valid YAML"),
    ],
)
def test_bad_files_name_the_file_and_field(tmp_path, text, message):
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as error:
        PriceTable.load(path)
    assert str(path) in str(error.value)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="cannot read the file"):
        PriceTable.load(tmp_path / "nope.yaml")
