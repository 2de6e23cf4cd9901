"""The ECLEKTIC run end to end against the real llama.cpp chat server (embedded Gemma 3 270M): answers,
judgements, metrics, heatmaps and report; kill -9 mid-run and the same command again pays nothing twice."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from crossknow.eclektic.answer import ANSWER_SCHEMA
from crossknow.eclektic.run import rescore_run, run_eclektic
from crossknow.eclektic.run_config import EclekticConfig, ScoreConfig
from crossknow.report.eclektic_runs import rebuild_eclektic_report
from crossknow.store.run_dir import ShardedTable
from crossknow.store.spend_ledger import SpendLedger
from tests.report.parse import parse_report

from ..fault_proxy import FaultProxy
from ..processes import run_until_then_kill

QUESTIONS = [  # the released wide schema, English and Japanese filled in (the 'popular' reading keeps those two)
    ("21", "en", "Paris", "What is the capital city of France?", "Paris", "Paris is the capital of France.",
     "フランスの首都はどこですか？", "パリ", "パリはフランスの首都である。"),
    ("22", "ja", "富士山", "What is the highest mountain in Japan?", "Mount Fuji",
     "Mount Fuji is the highest mountain in Japan.", "日本で一番高い山は何ですか？", "富士山",
     "富士山は日本で一番高い山である。"),
    ("23", "en", "Thames", "Which river flows through London?", "The Thames",
     "The River Thames flows through London.", "ロンドンを流れる川は何ですか？", "テムズ川",
     "テムズ川はロンドンを流れている。"),
]


def write_set(path: Path) -> Path:
    rows = []
    for q_id, source, title, en_q, en_a, en_c, ja_q, ja_a, ja_c in QUESTIONS:
        question, answer, context = (en_q, en_a, en_c) if source == "en" else (ja_q, ja_a, ja_c)
        rows.append({"q_id": q_id, "original_lang": source, "title": title, "url": None, "content": context,
                     "question": question, "answer": answer, "en_q": en_q, "en_a": en_a, "en_c": en_c,
                     "ja_q": ja_q, "ja_a": ja_a, "ja_c": ja_c})
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def config(data: Path, base_url: str, cache: Path, **extra) -> EclekticConfig:
    return EclekticConfig(data=str(data), model="openai:gemma-3-270m", base_url=base_url, variant="popular",
                          max_tokens=24, judge_max_tokens=8, max_attempts=2, concurrency=1, cache=str(cache), **extra)


def by_hand(judgements: list[dict], source_rows: bool = False) -> tuple[tuple[int, int], tuple[int, int], int]:
    """Majority verdicts, S and both averages, computed plainly from the judgements, source rows excluded (the
    default reading) or included: (overall numerator, n), (transfer numerator, |K|), invalid rows."""
    votes: dict[tuple, list] = {}
    for row in judgements:
        votes.setdefault((row["q_id"], row["source_lang"], row["lang"], row["sample"]), []).append(row["verdict"])
    correct = {}
    for key, verdicts in votes.items():
        yes, no = verdicts.count(True), verdicts.count(False)
        correct[key] = True if yes > no else False if no > yes else None
    overall, transfer, invalid = [0, 0], [0, 0], 0
    for (q_id, source, lang, sample), right in correct.items():
        source_right = correct[(q_id, source, source, sample)]
        if right is None or source_right is None:
            invalid += 1
            continue
        if lang == source and not source_rows:
            continue
        success = int(right and source_right)
        overall[0] += success
        overall[1] += 1
        if source_right:
            transfer[0] += success
            transfer[1] += 1
    return tuple(overall), tuple(transfer), invalid


@pytest.mark.slow
def test_run_end_to_end_on_the_llama_server(llama_chat_server, tmp_path):
    data, out, cache = write_set(tmp_path / "set.jsonl"), tmp_path / "run", tmp_path / "requests.sqlite"
    settings = config(data, llama_chat_server, cache, judges=["openai:judge-a"], judge_base_url=llama_chat_server,
                      judge_free=["recall"])
    outcome = run_eclektic(settings, out)
    assert outcome.examples == 6 and outcome.pending == 0 and outcome.meter.calls >= 6

    answers = pq.read_table(out / "answers.parquet").to_pylist()
    assert [(r["q_id"], r["lang"]) for r in answers] == [("21", "en"), ("21", "ja"), ("22", "ja"), ("22", "en"),
                                                        ("23", "en"), ("23", "ja")]
    assert all((r["text"] is None) != (r["error"] is None) for r in answers)  # text or a reason, never dropped
    judgements = pq.read_table(out / "judgements.parquet").to_pylist()
    assert Counter(r["judge"] for r in judgements) == {"openai:judge-a": 6, "recall": 6}
    assert all((r["verdict"] is None) == (r["error"] is not None) for r in judgements)  # invalid stays null

    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    (overall_num, overall_n), (transfer_num, transfer_n), invalid = by_hand(judgements)
    assert (metrics["overall"]["numerator"], metrics["overall"]["n"]) == (overall_num, overall_n)
    assert (metrics["transfer"]["numerator"], metrics["transfer"]["n"]) == (transfer_num, transfer_n)
    assert metrics["n_invalid"] == invalid and metrics["source_rows"] == "exclude"
    examples = pq.read_table(out / "examples.parquet").to_pylist()
    assert len(examples) == 6 and sum(bool(r["success"]) for r in examples) == overall_num
    judges = json.loads((out / "judges.json").read_text(encoding="utf-8"))
    assert set(judges["by_judge"]) == {"openai:judge-a", "recall"} and judges["agreement"]["method"] == "cohen"

    report = parse_report(rebuild_eclektic_report(out).read_text(encoding="utf-8"))
    assert {"fig-transfer", "fig-overall"} <= set(report.figures)
    assert (out / "figures" / "transfer.png").is_file() and (out / "figures" / "overall.png").is_file()
    assert report.tables["table-summary"].rows[0][3:5] == [str(overall_n), str(transfer_n)]
    assert report.tables["table-judges"].column("judge") == ["openai:judge-a", "recall"]

    # scored again with the source rows, from the run directory's files alone
    include = rescore_run(out, ScoreConfig(source_rows="include"))
    (overall_num, overall_n), (transfer_num, transfer_n), invalid = by_hand(judgements, source_rows=True)
    assert (include.overall.numerator, include.overall.n) == (overall_num, overall_n)
    assert (include.transfer.numerator, include.transfer.n) == (transfer_num, transfer_n)
    assert overall_n + invalid == 6
    assert json.loads((out / "metrics.json").read_text(encoding="utf-8"))["source_rows"] == "include"
    rescore_run(out, ScoreConfig())

    # the same command again: everything is in the stages, no model is even asked
    again = run_eclektic(settings, out)
    assert again.meter.calls == again.meter.cached_calls == 0
    assert json.loads((out / "metrics.json").read_text(encoding="utf-8")) == metrics
    # a new run directory on the same cache: every call replayed, none paid
    fresh = run_eclektic(settings, tmp_path / "fresh")
    assert fresh.meter.calls == 0 and fresh.meter.cached_calls == outcome.meter.calls
    assert json.loads((tmp_path / "fresh" / "metrics.json").read_text(encoding="utf-8")) == metrics


@pytest.mark.slow
def test_killed_run_resumes_and_pays_nothing_twice(llama_chat_server_process, tmp_path):
    """kill -9 after the first committed question, then the same command: the committed answers are kept as they
    were, every question is answered once, and the run's own cache replays it whole into a new directory with the
    same texts and metrics. Texts are compared only where a record or the cache guarantees them; a fresh run on
    another cache would rely on the server generating the same text twice."""
    data = write_set(tmp_path / "set.jsonl")
    cache = tmp_path / "requests.sqlite"
    with FaultProxy(llama_chat_server_process.port) as proxy:
        out = tmp_path / "run"
        command = [sys.executable, "-m", "crossknow", "eclektic", "run", "--data", str(data), "--model",
                   "openai:gemma-3-270m", "--base-url", proxy.base_url, "--variant", "popular", "--judge-free",
                   "recall", "--batch-size", "1", "--concurrency", "1", "--max-tokens", "24", "--max-attempts", "2",
                   "--cache", str(cache), "--out", str(out)]
        stage = out / "stages" / "answers"
        run_until_then_kill(command, tmp_path, tmp_path / "killed.log", lambda: len(ShardedTable(stage).done_keys())
                            >= 1, 300, "the first committed question")
        committed = ShardedTable(stage).done_keys()
        assert 1 <= len(committed) < 3 and not (out / "metrics.json").exists()
        first_pass = ShardedTable(stage).read(ANSWER_SCHEMA).to_pylist()
        resumed = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert resumed.returncode == 0, resumed.stderr
        sent = [seen["body"] for seen in proxy.seen if seen["path"].endswith("/chat/completions")]
        # the whole run's spend counts every request once, the one in flight at the kill too
        whole = SpendLedger(out).total()
        assert whole.calls == len(set(sent)) and whole.tokens > 0
        assert f"whole run: {whole.calls} calls, {whole.tokens:,} tokens" in " ".join(resumed.stdout.split())
        # the run's own cache, replayed into a new directory through the same address: no request goes out
        before_replay = len(proxy.seen)
        replay = run_eclektic(config(data, proxy.base_url, cache, judge_free=["recall"]), tmp_path / "replay")
        assert len(proxy.seen) == before_replay and replay.meter.calls == 0
    # at most the one request in flight at the kill (concurrency 1) went out twice; nothing else was repeated
    repeated = [body for body, count in Counter(sent).items() if count > 1]
    assert len(repeated) <= 1 and all(Counter(sent)[body] == 2 for body in repeated)

    answers = pq.read_table(out / "answers.parquet").to_pylist()
    keys = [(r["q_id"], r["lang"]) for r in answers]
    assert sorted(keys) == sorted({(q[0], lang) for q in QUESTIONS for lang in ("en", "ja")}) and len(set(keys)) == 6
    assert all((r["text"] is None) != (r["error"] is None) for r in answers)  # text or a reason, never dropped
    # the questions committed before the kill keep the first pass's records: the resume did not ask them again
    assert {q for q, _ in keys} >= committed and {r["q_id"] for r in first_pass} == committed
    kept = {(r["q_id"], r["lang"]): (r["text"], r["error"]) for r in answers if r["q_id"] in committed}
    assert kept == {(r["q_id"], r["lang"]): (r["text"], r["error"]) for r in first_pass}
    # the metrics are those of the run's own judgements, and the replay from its cache gives the same texts and metrics
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    judgements = pq.read_table(out / "judgements.parquet").to_pylist()
    (overall_num, overall_n), (transfer_num, transfer_n), invalid = by_hand(judgements)
    assert (metrics["overall"]["numerator"], metrics["overall"]["n"]) == (overall_num, overall_n)
    assert (metrics["transfer"]["numerator"], metrics["transfer"]["n"]) == (transfer_num, transfer_n)
    assert metrics["n_invalid"] == invalid
    assert metrics == replay.metrics.model_dump(mode="json")
    replayed = pq.read_table(tmp_path / "replay" / "answers.parquet").to_pylist()
    assert [(r["q_id"], r["lang"], r["text"], r["error"]) for r in replayed] == [
        (r["q_id"], r["lang"], r["text"], r["error"]) for r in answers]
