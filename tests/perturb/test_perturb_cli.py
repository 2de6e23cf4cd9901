"""`crossknow perturb` end to end on the shipped demo corpus (the real tokenizer), its files, their contract with
`crossknow trace-sequences`, reruns, and bad input."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crossknow.cli.app import app
from crossknow.data.sequence_variants import SequenceVariant
from crossknow.dynamics.sequence_inputs import read_sequences
from crossknow.perturb.records import PerturbationFailure, PerturbSummary

runner = CliRunner()


def perturb(*args: str):
    return runner.invoke(app, ["perturb", *args], catch_exceptions=False)


@pytest.fixture(scope="module")
def perturb_run_dir(demo_corpus: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("perturb") / "run"
    result = perturb("--corpus", demo_corpus, "--n", "4", "--methods", "mask,random,delete,reorder,partial",
                     "--x", "8,32", "--y", "2,100", "--partial-unit", "tokens", "--seed", "5", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "reorder-32@100" in result.output and "variants:" in result.output
    return out


def test_the_run_writes_variants_failures_and_summary(perturb_run_dir: Path) -> None:
    variants = [SequenceVariant.model_validate_json(line)
                for line in (perturb_run_dir / "variants.jsonl").read_text(encoding="utf-8").splitlines()]
    failures = [PerturbationFailure.model_validate_json(line)
                for line in (perturb_run_dir / "failures.jsonl").read_text(encoding="utf-8").splitlines()]
    summary = PerturbSummary.model_validate_json((perturb_run_dir / "summary.json").read_text(encoding="utf-8"))
    sources = {v.source_id for v in variants}
    assert len(sources) == 4 and all(s.endswith("-ja") for s in sources)
    assert len({v.id for v in variants}) == len(variants)
    # per source: original, 3 methods x 2 X, reorder 2 X x 2 Y, 4 partial segments;
    # Y=100 exceeds every abstract (54-88 tokens)
    per_source = 1 + 3 * 2 + 2 * 2 + 4
    assert len(variants) + len(failures) == 4 * per_source
    assert Counter(f.y for f in failures) == {100: 4 * 2}
    assert all(f.reason.startswith("window Y=100 is not smaller than the sequence") for f in failures)
    counted = Counter(v.method for v in variants)
    assert {row.label: row.variants for row in summary.rows if row.method == "mask"} == {"mask-8": 4, "mask-32": 4}
    assert sum(row.variants for row in summary.rows) == summary.variants == len(variants) == sum(counted.values())
    assert sum(row.failed for row in summary.rows) == summary.failures == len(failures)
    mask8 = [v for v in variants if v.method == "mask" and v.x == 8]
    row = next(row for row in summary.rows if row.label == "mask-8")
    assert row.mean_edit_distance == pytest.approx(sum(v.edit_distance for v in mask8) / 4, abs=1e-4)


def test_trace_sequences_reads_the_variants(perturb_run_dir: Path) -> None:
    sequences = read_sequences(perturb_run_dir / "variants.jsonl")
    by_id = {s.variant_id: s for s in sequences}
    original = next(s for s in sequences if s.method == "original")
    assert original.token_ids is None
    reorder = by_id[f"{original.source_id}:reorder-8@2"]
    assert (reorder.method, reorder.x, reorder.y, reorder.a) == ("reorder", 8, 2, None)
    assert reorder.token_ids is not None and by_id[f"{original.source_id}:partial-3"].a == 3


def test_a_rerun_writes_the_same_variants(perturb_run_dir: Path, demo_corpus: str, tmp_path: Path) -> None:
    out = tmp_path / "again"
    result = perturb("--corpus", demo_corpus, "--n", "4", "--methods", "mask,random,delete,reorder,partial",
                     "--x", "8,32", "--y", "2,100", "--partial-unit", "tokens", "--seed", "5", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert (out / "variants.jsonl").read_bytes() == (perturb_run_dir / "variants.jsonl").read_bytes()


@pytest.mark.parametrize(("args", "message"), [
    (["--x", "8,150"], "X 150 is outside 1-100"),
    (["--x", "0"], "X 0 is outside 1-100"),
    (["--y", "0"], "window Y 0 is below 1"),
    (["--sentence-x", "140", "--methods", "partial"], "sentence X 140 is outside 1-100"),
    (["--methods", "mask,monosyn"], "monosyn need a synonym dictionary (--synonyms FILE)"),
    (["--methods", "syntax"], "syntax need a generator (--generator SPEC)"),
    (["--methods", "shuffle"], "--methods[0]"),
    (["--model", "openai:gpt-4.1"], "'openai:gpt-4.1' names no local tokenizer"),
])
def test_bad_input_is_one_clear_error(args: list[str], message: str, demo_corpus: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["perturb", "--corpus", demo_corpus, "--out", str(tmp_path / "x"), *args])
    assert result.exit_code != 0
    shown = str(result.exception) if result.exception and not isinstance(result.exception, SystemExit) else ""
    assert message in result.output + shown


def test_a_wrong_synonym_file_names_file_and_line(demo_corpus: str, tmp_path: Path) -> None:
    bad = tmp_path / "syn.tsv"
    bad.write_text("ja\t酵素\tja\tエンザイム\nja\t酵素 enzyme\n", encoding="utf-8")
    result = runner.invoke(app, ["perturb", "--corpus", demo_corpus, "--out", str(tmp_path / "x"), "--methods",
                                 "monosyn", "--synonyms", str(bad)])
    assert result.exit_code != 0
    assert f"{bad}, line 2: expected 4 tab-separated fields" in str(result.exception)
    assert not (tmp_path / "x" / "variants.jsonl").exists()


def test_summary_json_is_plain_json(perturb_run_dir: Path) -> None:
    summary = json.loads((perturb_run_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["sequences"] == 4 and summary["mask_token"] == "<unk>"
