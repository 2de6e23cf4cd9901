"""Malformed input files at the command line: one `error:` line naming the file, exit status 2, no traceback, no
model loaded and nothing half-written, for every command that reads a user's file before a model.

Each command's inputs are drawn from the readers of `seeds.READERS` (an item file for `evaluate`, a corpus and a
price table for `generate`, ...) and changed by a mutation class that the reader refuses (`expectations`); the
other files the command line names are the readers' valid seeds. Commands run in this process through
crossknow's entry point (`tests.cli.in_process`), with every way to a model closed (`tests.cli.command_inputs`).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.cli.command_inputs import close_models  # noqa: E402
from tests.cli.in_process import run_main  # noqa: E402
from tests.cli.test_cli import assert_nothing_half_done  # noqa: E402
from tests.fuzz.conftest import cli_examples, fuzz_settings  # noqa: E402
from tests.fuzz.expectations import CLASSES, REFUSED, expectation  # noqa: E402
from tests.fuzz.mutations import Mutated  # noqa: E402
from tests.fuzz.seeds import READERS, Reader  # noqa: E402
from tests.fuzz.tally import note_cli  # noqa: E402

BY_NAME = {reader.name: reader for reader in READERS}


@dataclass(frozen=True)
class Target:
    """One input file of a command line: the reader whose seed and mutation classes make it, and the arguments,
    `{file}` where it goes, `{dir}` for the folder of the run and `{out}` for the run directory."""

    reader: str
    argv: tuple[str, ...]
    valid: tuple[str, ...] = ()
    """Readers whose valid seeds the command line names too (written into `{dir}` under their file names)."""


def _evaluate(reader: str) -> Target:
    return Target(reader, ("evaluate", "--data", "{file}", "--model", "default", "--out", "{out}"))


GENERATE = ("generate", "--corpus", "{dir}/corpus.jsonl", "--detector", "default", "--writer", "default", "--out",
            "{out}")
TARGETS: dict[str, tuple[Target, ...]] = {
    "evaluate": tuple(_evaluate(reader) for reader in ("items-jsonl", "items-parquet", "items-pitfalls",
                                                         "items-adaxeval-release")),
    "trace": (
        Target("items-jsonl", ("trace", "--data", "{file}", "--checkpoints", "default", "--out", "{out}")),
        Target("pairing", ("trace", "--data", "{dir}/items.jsonl", "--pairing", "{file}", "--checkpoints", "default",
                           "--out", "{out}"), valid=("items-jsonl",)),
    ),
    "generate": (
        Target("corpus", GENERATE),
        Target("prices-yaml", (*GENERATE, "--prices", "{file}"), valid=("corpus",)),
        Target("prompt-table", (*GENERATE, "--prompts", "{dir}"), valid=("corpus",)),
    ),
    "pitfalls eval": (
        Target("pitfalls-pairs", ("pitfalls", "eval", "--pairs", "{file}", "--model", "default", "--out", "{out}")),
        Target("prices-json", ("pitfalls", "eval", "--pairs", "{dir}/Korean.json", "--model", "default", "--prices",
                               "{file}", "--out", "{out}"), valid=("pitfalls-pairs",)),
    ),
    "pitfalls probe": (
        Target("pitfalls-sources", ("pitfalls", "probe", "--recipe", "paper", "--sources", "{file}", "--n", "2",
                                    "--proxy", "default", "--simulator", "default", "--out", "{out}")),
    ),
    "eclektic run": (
        Target("eclektic-set", ("eclektic", "run", "--data", "{file}", "--model", "default", "--out", "{out}")),
        Target("prices-yaml", ("eclektic", "run", "--data", "{dir}/main.jsonl", "--model", "default", "--prices",
                               "{file}", "--out", "{out}"), valid=("eclektic-set",)),
    ),
    "eclektic score": (
        Target("eclektic-judgements", ("eclektic", "score", "--judgements", "{file}", "--out", "{out}")),
    ),
}
"""The input files fuzzed, per command."""


def refused_classes(reader: Reader) -> list[str]:
    """The mutation classes of the reader's file kind that the reader refuses."""
    seed = reader.seed()
    return [cls for cls, mutation in CLASSES[reader.kind].items()
            if mutation.applies(seed, reader.breaks_rule) and expectation(reader.kind, cls, reader.expect) == REFUSED]


def _model_reached(*_args: object, **_kwargs: object) -> None:
    pytest.fail("a model was reached before the malformed input was refused")


def refused_by_command(command: str, target: Target, mutated: Mutated, monkeypatch, capsys, tmp_path: Path) -> None:
    """Run the command line on the mutated file and assert a user error that names it, with nothing done."""
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    reader = BY_NAME[target.reader]
    for name in target.valid:
        (folder / BY_NAME[name].file_name).write_bytes(BY_NAME[name].seed())
    path = folder / reader.file_name
    path.write_bytes(mutated.data)
    out = folder / "run"
    args = [arg.format(file=path, dir=folder, out=out) for arg in target.argv]
    close_models(monkeypatch, _model_reached)
    met = False
    try:
        finished = run_main(monkeypatch, capsys, folder, *args)
        assert finished.code == 2, (finished.code, finished.stderr)
        assert "Traceback" not in finished.stderr + finished.stdout, finished.stderr
        assert finished.stderr.count("error:") == 1, finished.stderr
        assert f"error: {path}" in finished.error_line, finished.error_line
        assert_nothing_half_done(out)
        met = True
    finally:
        note_cli(command, met)


@pytest.mark.parametrize("command", TARGETS)
@fuzz_settings(max_examples=cli_examples())
@given(data=st.data())
def test_a_malformed_input_is_one_error_line_naming_it(command: str, data: st.DataObject, monkeypatch, capsys,
                                                       tmp_path: Path):
    target = data.draw(st.sampled_from(TARGETS[command]), label="input")
    reader = BY_NAME[target.reader]
    cls = data.draw(st.sampled_from(refused_classes(reader)), label="class")
    mutated = data.draw(CLASSES[reader.kind][cls].strategy(reader.seed(), reader.breaks_rule), label="file")
    refused_by_command(command, target, mutated, monkeypatch, capsys, tmp_path)
