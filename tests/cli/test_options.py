"""Options built from config classes (`crossknow.cli.options`): one definition per option."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
import typer
from pydantic import Field, ValidationError, model_validator
from typer.testing import CliRunner

from crossknow.adaxeval.records import GenerateConfig
from crossknow.cli.app import app
from crossknow.cli.options import config_command, describe_validation_error, field_option
from crossknow.data.schemas import Record
from crossknow.dynamics.trace_config import TraceConfig
from crossknow.errors import CrossknowError
from crossknow.evaluation.records import EvaluateConfig
from crossknow.training.records import TrainConfig

WIDE = {"COLUMNS": "2000"}
"""A terminal wide enough that rich wraps no help line."""


class ToyConfig(Record):
    """A config with one field of each kind the helper handles."""

    data: str = Field(description="Data file [with brackets], required.")
    size: int = Field(default=3, ge=1, description="How many.")
    mode: Literal["fast", "exact"] = Field(default="exact", description="How to run.")
    layout: Literal["one-per-line", "all-in-one", "none"] = Field(default="none", description="How to lay out.")
    sources: list[str] = Field(min_length=1, description="Where from.")
    langs: list[str] = Field(default_factory=lambda: ["en", "ja"], description="Which languages.")
    strict: bool = Field(default=True, description="Stop at the first problem.")
    scale: float | None = Field(default=None, description="Optional factor.")

    @model_validator(mode="after")
    def _check(self) -> ToyConfig:
        if self.mode == "fast" and self.strict:
            raise ValueError("fast mode cannot be strict")
        return self


def toy_app(received: list) -> typer.Typer:
    """An app with one command built from ToyConfig; each call appends (config, out) to `received`."""
    toy = typer.Typer(add_completion=False)

    @config_command(toy, ToyConfig, name="run", flags={"sources": "--source"}, comma_lists=("langs",))
    def run(config: ToyConfig, out: Path = typer.Option(..., help="Where to write.")) -> None:
        received.append((config, out))

    @toy.callback()
    def root() -> None:
        """Keep `run` a sub-command."""

    return toy


def option_line(help_text: str, flag: str) -> str:
    """The line of `--help` output that shows option `flag`."""
    found = [line for line in help_text.splitlines() if f" {flag} " in line]
    assert len(found) == 1, (flag, help_text)
    return found[0]


def test_parsed_values_become_the_config():
    received: list = []
    result = CliRunner().invoke(
        toy_app(received),
        ["run", "--data", "d.jsonl", "--source", "a", "--source", "b", "--langs", "en, de,", "--size", "5",
         "--mode", "fast", "--layout", "all-in-one", "--no-strict", "--scale", "0.5", "--out", "o"],
    )
    assert result.exit_code == 0, result.output
    assert received == [(
        ToyConfig(data="d.jsonl", size=5, mode="fast", layout="all-in-one", sources=["a", "b"], langs=["en", "de"],
                  strict=False, scale=0.5),
        Path("o"),
    )]


def test_defaults_come_from_the_fields():
    received: list = []
    result = CliRunner().invoke(toy_app(received), ["run", "--data", "d", "--source", "s", "--out", "o"])
    assert result.exit_code == 0, result.output
    assert received[0][0] == ToyConfig(data="d", sources=["s"])


def test_help_shows_each_fields_description_default_and_choices():
    result = CliRunner().invoke(toy_app([]), ["run", "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    flags = ("--data", "--size", "--mode", "--layout", "--source", "--langs", "--strict", "--scale", "--out")
    lines = {flag: option_line(result.output, flag) for flag in flags}
    assert "Data file [with brackets], required." in lines["--data"] and "[required]" in lines["--data"]
    assert "How many." in lines["--size"] and "[default: 3]" in lines["--size"]
    assert "[fast|exact]" in lines["--mode"] and "[default: exact]" in lines["--mode"]
    assert "Where from. Repeat the option for more." in lines["--source"]
    assert "Which languages. Comma-separated." in lines["--langs"] and "[default: en,ja]" in lines["--langs"]
    assert "<choice>" in lines["--layout"]
    assert "How to lay out. One of: one-per-line, all-in-one, none." in lines["--layout"]
    assert "--no-strict" in lines["--strict"]
    assert "Optional factor." in lines["--scale"] and "default" not in lines["--scale"]
    assert "Where to write." in lines["--out"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--size", "0"], "--size: Input should be greater than or equal to 1"),
        (["--mode", "slow"], "--mode: Input should be 'fast' or 'exact'"),
        (["--mode", "fast"], "fast mode cannot be strict"),
        (["--langs", ","], None),
    ],
    ids=["bound", "choice", "model-check", "empty-list-is-fine"],
)
def test_invalid_values_are_one_error_naming_the_option(args, message):
    received: list = []
    result = CliRunner().invoke(toy_app(received), ["run", "--data", "d", "--source", "s", "--out", "o", *args])
    if message is None:
        assert result.exit_code == 0 and received[0][0].langs == []
        return
    assert isinstance(result.exception, CrossknowError), result.output
    assert message in str(result.exception) and not received
    assert not str(result.exception).startswith("--:") and "Value error" not in str(result.exception)


def test_describe_validation_error_uses_the_renamed_flag():
    with pytest.raises(ValidationError) as error:
        ToyConfig(data="d", sources=[])
    assert describe_validation_error(error.value, {"sources": "--source"}).startswith("--source: List should")


def test_config_mistakes_are_caught_when_the_command_is_defined():
    class Undocumented(Record):
        x: int = 1

    with pytest.raises(TypeError, match="no description"):
        field_option(Undocumented, "x")
    with pytest.raises(TypeError, match="no fields"):
        config_command(typer.Typer(), ToyConfig, exclude=("nope",))

    def clash(config: ToyConfig, size: int = 1) -> None: ...

    with pytest.raises(TypeError, match="also fields"):
        config_command(typer.Typer(), ToyConfig)(clash)
    with pytest.raises(TypeError, match="must be annotated ToyConfig"):
        config_command(typer.Typer(), ToyConfig)(lambda options: None)


@pytest.mark.parametrize(
    ("command", "config_cls", "renamed", "not_options"),
    [
        ("evaluate", EvaluateConfig, {}, ()),
        ("train", TrainConfig, {}, ()),
        ("trace", TraceConfig, {}, ()),
        ("generate", GenerateConfig, {"detectors": "--detector", "timeout_s": "--timeout"}, ("ner",)),
    ],
)
def test_every_config_field_is_an_option_whose_help_is_its_description(command, config_cls, renamed, not_options):
    """The commands' help cannot drift from the configs: each field's description is its option's help."""
    result = CliRunner().invoke(app, [command, "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    for field, info in config_cls.model_fields.items():
        if field in not_options:
            continue
        flag = renamed.get(field, "--" + field.replace("_", "-"))
        line = option_line(result.output, flag)
        assert info.description in line, (flag, line)
        default = None if info.is_required() else info.get_default(call_default_factory=True)
        if isinstance(default, str | int | float) and not isinstance(default, bool):
            assert f"[default: {default}]" in line, (flag, line)
