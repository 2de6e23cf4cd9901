"""`crossknow generate` and `crossknow annotate`: clear errors with nothing half-done (in process), and (slow,
across the process boundary) a real run against the llama.cpp server with the embedded model, killed with
SIGKILL mid-run and resumed to the same outputs as the uninterrupted run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.in_process import user_error

MINI = Path(__file__).resolve().parents[1] / "adaxeval" / "fixtures" / "mini_corpus.jsonl"


def crossknow(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run the real command line in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "crossknow", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def generate_args(out: Path, *extra: str, corpus: Path = MINI) -> list[str]:
    return ["generate", "--corpus", str(corpus), "--out", str(out), "--detector", "default", "--writer", "default",
            *extra]


def test_bad_corpus_line_names_file_line_and_field(tmp_path, monkeypatch, capsys):
    corpus = tmp_path / "corpus.jsonl"
    lines = MINI.read_text(encoding="utf-8").splitlines()
    bad = json.loads(lines[2]) | {"text": 42}
    corpus.write_text("\n".join([*lines[:2], json.dumps(bad), *lines[3:]]) + "\n", encoding="utf-8")
    stderr = user_error(monkeypatch, capsys, tmp_path, *generate_args(tmp_path / "run", corpus=corpus))
    assert str(corpus) in stderr and "line 3" in stderr and "'text'" in stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (("--langs", "en,de"), "no AdaXEval prompts for language 'de'"),
        (("--langs", "en"), "--langs"),
        (("--json-mode", "yaml"), "--json-mode"),
        (("--detector", "openai:qwen"), "needs a server: write it in the spec, openai:qwen@URL"),
        (("--writer", "gemma-270m"), "hf:PATH_OR_ID[@REVISION]"),
        (("--ner", "ja=stanza"), "unknown NER backend 'stanza'"),
        (("--fact-order", "last"), "--fact-order: Input should be 'paper' or 'reasoning_first'"),
    ],
    ids=["no-prompts", "one-language", "json-mode", "no-server", "bad-spec", "bad-ner", "fact-order"],
)
def test_bad_options_fail_before_anything_is_written(tmp_path, monkeypatch, capsys, extra, words):
    out = tmp_path / "run"
    stderr = user_error(monkeypatch, capsys, tmp_path, *generate_args(out), *extra)
    assert words in stderr
    assert not (out / "stages").exists()


def test_annotate_score_names_row_and_column(tmp_path, monkeypatch, capsys):
    from crossknow.adaxeval.annotate import MATERIAL, score_columns

    header = [*MATERIAL, *(column for column, _ in score_columns()), "notes"]
    row = dict.fromkeys(header, "") | {"item_id": "d#0", "lang": "en", "paraphrase_fluency": "5"}
    sheet = tmp_path / "filled.csv"
    sheet.write_text(",".join(header) + "\n" + ",".join(row[h] for h in header) + "\n", encoding="utf-8")
    stderr = user_error(monkeypatch, capsys, tmp_path, "annotate", "score", "--sheet", str(sheet))
    assert "row 1 (item d#0), column 'paraphrase_fluency': '5'" in stderr


def test_annotate_export_draws_the_papers_100_items_per_language_by_default():
    import inspect

    from crossknow.cli.annotate_cmd import export

    assert inspect.signature(export).parameters["n"].default.default == 100  # the full paper's section 3.4


# ---- against the real llama.cpp server (the embedded Gemma 3 270M) ---------------------------------

SMALL = ("--docs", "1", "--sample", "1", "--threshold", "0", "--no-quality-filter", "--concurrency", "1",
         "--max-tokens", "160", "--seed", "3", "--timeout", "900")
"""A run small enough for a CPU: one pair, one sentence per language; keep whatever the base model
writes that validates (the tests check structure, counts, cache and resume, not quality). The request
timeout is long because llama.cpp's threads slow down far more than the rest when other work shares the
2 cores (seen: under 1 token/s, so that 160 tokens outlasted the default 300 s on every retry)."""


def server_args(out: Path, base_url: str, cache: Path) -> list[str]:
    return [
        "generate", "--corpus", str(MINI), "--out", str(out), "--base-url", base_url, "--cache", str(cache),
        "--detector", "openai:gemma", "--detector", "openai:gemma", "--writer", "openai:gemma", *SMALL,
    ]


def dataset_files(out: Path) -> dict[str, str]:
    files = sorted((out / "dataset").rglob("*.jsonl")) + [out / "invalid.jsonl"]
    return {str(p.relative_to(out)): p.read_text(encoding="utf-8") for p in files}


@pytest.fixture(scope="module")
def reference_run(llama_chat_server, tmp_path_factory):
    """One uninterrupted run against the server; its cache is shared by the tests below."""
    root = tmp_path_factory.mktemp("generate")
    cache, out = root / "cache.sqlite", root / "reference"
    started = time.monotonic()
    result = crossknow(*server_args(out, llama_chat_server, cache), cwd=root, timeout=2400)
    assert result.returncode == 0, result.stdout + result.stderr
    return {"root": root, "cache": cache, "out": out, "stdout": result.stdout,
            "seconds": time.monotonic() - started, "url": llama_chat_server}


@pytest.mark.nightly
@pytest.mark.timeout(1800)
def test_generate_end_to_end_on_llama_cpp(reference_run):
    out, stdout = reference_run["out"], reference_run["stdout"]
    assert "AdaXEval generation" in stdout and "Document pairs" in stdout and "After quality filtering" in stdout
    summary = json.loads((out / "summary.json").read_text())
    table = {row["stage"]: row for row in summary["counts"]}
    assert table["documents"]["counts"] == {"en": 1, "ja": 1}
    assert table["sample"]["counts"] == {"en": 1, "ja": 1}
    # each stage keeps at most what it was given; invalid outputs are counted, not dropped
    order = ["sample", "facts", "triples", "cloze", "paraphrase", "distractors", "quality"]
    for before, after in zip(order, order[1:], strict=False):
        for lang in ("en", "ja"):
            given = table[before]["counts"][lang]
            assert table[after]["counts"][lang] + table[after]["invalid"].get(lang, 0) <= given
    assert summary["calls_this_run"] >= 2
    assert summary["models"] == {f"openai:gemma@{reference_run['url']}": {"model": "openai:gemma",
                                                                          "prompt_format": "chat"}}
    from crossknow.data.formats import load_item_set

    written = 0
    for lang in ("en", "ja"):
        for name in ("memorization", "generalization"):
            path = out / f"dataset/{lang}/{name}.jsonl"
            if table["quality"]["counts"][lang] == 0:
                assert path.read_text() == ""  # an empty set is still written
                continue
            items = load_item_set(path)
            assert len(items.items) == table["quality"]["counts"][lang] and not items.invalid
            written += len(items.items)
    links = (out / "dataset/interlingual.jsonl").read_text().splitlines()
    assert len(links) * 2 == written
    config = (out / "config.yaml").read_text()
    assert "seed: 3" in config and "openai:gemma" in config


@pytest.mark.nightly
def test_rerun_is_answered_by_the_cache(reference_run):
    root = reference_run["root"]
    out = root / "from-cache"
    result = crossknow(*server_args(out, reference_run["url"], reference_run["cache"]), cwd=root)
    assert result.returncode == 0, result.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["calls_this_run"] == 0 and summary["cached_calls_this_run"] > 0
    assert dataset_files(out) == dataset_files(reference_run["out"])


def _committed(manifest: Path) -> list[str]:
    try:
        return [key for shard in json.loads(manifest.read_text())["shards"] for key in shard["keys"]]
    except (FileNotFoundError, json.JSONDecodeError):
        return []


@pytest.mark.nightly
def test_sigkill_after_the_first_stage_then_resume(reference_run):
    root = reference_run["root"]
    out = root / "killed"
    command = [sys.executable, "-m", "crossknow", *server_args(out, reference_run["url"], reference_run["cache"])]
    with open(root / "killed.log", "wb") as log:
        process = subprocess.Popen(command, cwd=root, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not _committed(out / "stages" / "split" / "manifest.json"):
            assert process.poll() is None, (root / "killed.log").read_text()
            assert time.monotonic() < deadline, "the first stage did not commit within 120 s"
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == -signal.SIGKILL
    assert not (out / "summary.json").exists()
    before = {m.parent.name: _committed(m) for m in (out / "stages").glob("*/manifest.json")}
    result = crossknow(*server_args(out, reference_run["url"], reference_run["cache"]), cwd=root)
    assert result.returncode == 0, result.stderr
    after = {m.parent.name: _committed(m) for m in (out / "stages").glob("*/manifest.json")}
    for stage, keys in after.items():
        assert len(keys) == len(set(keys)), f"{stage}: an input decided twice"
        assert keys[: len(before.get(stage, []))] == before.get(stage, []), f"{stage}: committed work redone"
    assert dataset_files(out) == dataset_files(reference_run["out"])
    reference = json.loads((reference_run["out"] / "summary.json").read_text())["counts"]
    assert json.loads((out / "summary.json").read_text())["counts"] == reference
