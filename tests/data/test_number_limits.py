"""The guarded loader's number rules, one for every format: an integer is a 64-bit integer (in JSON, YAML and a
CSV cell), and a JSON number is finite; each number past them is an InputError naming the file and the field."""

from __future__ import annotations

import pytest

from crossknow.data.guarded import MAX_INT, MIN_INT, parse_int, parse_json, parse_yaml
from crossknow.errors import InputError


@pytest.mark.parametrize("number", [MIN_INT, MAX_INT, 0, -1])
def test_every_64_bit_integer_is_read(number):
    assert parse_json(f'{{"n": [{number}]}}', "f.json") == {"n": [number]}
    assert parse_yaml(f"n: [{number}]", "f.yaml") == {"n": [number]}
    assert parse_int(str(number)) == number


@pytest.mark.parametrize("literal", [str(MAX_INT + 1), str(MIN_INT - 1), "9" * 4300, "-" + "9" * 5000])
def test_an_integer_past_64_bits_is_refused_by_field(literal):
    with pytest.raises(InputError) as info:
        parse_json(f'{{"a": 1,\n "n": [0, {literal}]}}', "f.json")
    assert (info.value.path, info.value.line, info.value.field) == ("f.json", 2, "n[1]")
    with pytest.raises(InputError, match="line 2"):
        parse_yaml(f"a: 1\nn: [0, {literal}]\n", "f.yaml")
    assert parse_int(literal) is None


@pytest.mark.parametrize("literal", ["1e400", "-1e999", "9" * 400 + ".5"])
def test_a_json_number_too_large_for_a_float_is_refused(literal):
    with pytest.raises(InputError, match="too large for a number") as info:
        parse_json(f'{{"x": {{"y": {literal}}}}}', "f.json")
    assert info.value.field == "x.y"


@pytest.mark.parametrize("text", ["", " 1", "1.0", "1e3", "٣", "+", "0x10"])
def test_a_cell_that_is_no_integer_is_none(text):
    assert parse_int(text) is None


def test_a_lone_surrogate_escape_in_yaml_is_refused_by_field():
    with pytest.raises(InputError, match="lone surrogate") as info:
        parse_yaml('names: {en: "a\\ud800"}\n', "f.yaml")
    assert info.value.field == "names.en"
