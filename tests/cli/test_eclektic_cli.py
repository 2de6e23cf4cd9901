"""`crossknow eclektic score` on a hand-built judgements file: its scores across the process boundary, its errors
in process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from statistics import NormalDist

import pyarrow.parquet as pq
import pytest

from tests.cli.in_process import user_error
from tests.cli.test_cli import crossknow

# q1 and q2 come from English, q3 and q4 from Japanese; each is asked in en, ja and de. q3's German verdict is
# invalid (null).
JUDGEMENTS = [
    ("q1", "en", "en", True), ("q1", "en", "ja", True), ("q1", "en", "de", False),
    ("q2", "en", "en", False), ("q2", "en", "ja", True), ("q2", "en", "de", True),
    ("q3", "ja", "ja", True), ("q3", "ja", "en", True), ("q3", "ja", "de", None),
    ("q4", "ja", "ja", True), ("q4", "ja", "en", False), ("q4", "ja", "de", False),
]
# By hand. S = target right and source right. Valid examples: 11 (q3/de is invalid).
# include: S = 1 for q1/en, q1/ja, q3/ja, q3/en, q4/ja: 5 of 11; K = rows of q1, q3, q4 = 3 + 2 + 3 = 8: 5 of 8.
# exclude: translated rows only: S = 1 for q1/ja, q3/en: 2 of 7; K = 2 + 1 + 2 = 5: 2 of 5.
EXPECTED = {"include": ((5, 11), (5, 8)), "exclude": ((2, 7), (2, 5))}
Z = NormalDist().inv_cdf(0.975)


def write_judgements(path: Path, rows=JUDGEMENTS) -> Path:
    path.write_text("".join(json.dumps({"q_id": q, "source_lang": s, "target_lang": t, "correct": c}) + "\n"
                            for q, s, t, c in rows), encoding="utf-8")
    return path


def shown(numerator: int, n: int) -> str:
    """As Table 2 prints it, computed here: '45.5±29.4'."""
    p = numerator / n
    return f"{100 * p:.1f}±{100 * Z * (p * (1 - p) / n) ** 0.5:.1f}"


@pytest.mark.parametrize("reading", ["include", "exclude"])
def test_score_reproduces_hand_computed_metrics(tmp_path, reading):
    path = write_judgements(tmp_path / "judgements.jsonl")
    out = tmp_path / "scores"
    result = crossknow("eclektic", "score", "--judgements", str(path), "--out", str(out), "--source-rows", reading,
                       cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (overall_num, overall_n), (transfer_num, transfer_n) = EXPECTED[reading]
    assert shown(overall_num, overall_n) in result.stdout and shown(transfer_num, transfer_n) in result.stdout
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert (metrics["overall"]["numerator"], metrics["overall"]["n"]) == (overall_num, overall_n)
    assert (metrics["transfer"]["numerator"], metrics["transfer"]["n"]) == (transfer_num, transfer_n)
    p = overall_num / overall_n
    assert metrics["overall"]["half_width"] == pytest.approx(Z * (p * (1 - p) / overall_n) ** 0.5)
    assert metrics["n_invalid"] == 1 and metrics["source_rows"] == reading
    examples = pq.read_table(out / "examples.parquet").to_pylist()
    assert len(examples) == 12
    by_key = {(row["q_id"], row["lang"]): row for row in examples}
    assert by_key[("q2", "ja")]["success"] is False and by_key[("q2", "ja")]["source_correct"] is False
    assert by_key[("q3", "de")]["success"] is None and by_key[("q4", "ja")]["success"] is True
    assert (out / "report.html").is_file() and (out / "figures" / "transfer.png").is_file()


def test_bootstrap_keeps_the_values_and_widens_by_question(tmp_path):
    path = write_judgements(tmp_path / "judgements.jsonl")
    result = crossknow("eclektic", "score", "--judgements", str(path), "--out", str(tmp_path / "boot"), "--ci",
                       "bootstrap", "--n-boot", "500", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    metrics = json.loads((tmp_path / "boot" / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["ci"] == "bootstrap" and metrics["n_boot"] == 500 and metrics["source_rows"] == "exclude"
    overall = metrics["overall"]
    assert overall["value"] == pytest.approx(2 / 7) and overall["low"] <= 2 / 7 <= overall["high"]
    assert overall["half_width"] > 0


def test_a_bad_record_names_file_line_and_field(tmp_path, monkeypatch, capsys):
    path = write_judgements(tmp_path / "bad.jsonl", [*JUDGEMENTS[:3], ("q2", "en", "ja", "yes")])
    out = tmp_path / "scores"
    stderr = user_error(monkeypatch, capsys, tmp_path, "eclektic", "score", "--judgements", str(path), "--out",
                        str(out))
    assert "bad.jsonl, line 4" in stderr and "correct" in stderr
    assert not (out / "metrics.json").exists()


def test_score_needs_one_source(tmp_path, monkeypatch, capsys):
    stderr = user_error(monkeypatch, capsys, tmp_path, "eclektic", "score")
    assert "--run" in stderr and "--judgements" in stderr


@pytest.mark.nightly
@pytest.mark.timeout(1800)
def test_demo_measures_no_transfer_of_facts_learnt_in_english(tmp_path):
    """The embedded model learns 40 invented facts as English question-answer pairs: before training it answers
    none (nothing a model can know); after, it answers English questions and no Japanese one. With no
    transfer, the include reading gives transfer |K_en| / (2 |K_en|) = 50% and the default (exclude) reading 0."""
    import pyarrow.parquet as pq

    from crossknow.eclektic.judge import majority_vote
    from crossknow.eclektic.metrics import eclektic_metrics

    out = tmp_path / "demo"
    result = subprocess.run([sys.executable, "-m", "crossknow", "eclektic", "demo", "--out", str(out)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stderr
    base = json.loads((out / "base" / "metrics.json").read_text(encoding="utf-8"))
    assert base["overall"]["numerator"] == 0 and base["transfer"]["n"] == 0
    examples = pq.read_table(out / "trained" / "examples.parquet").to_pylist()
    english = sum(bool(r["correct"]) for r in examples if r["lang"] == "en")
    japanese = sum(bool(r["correct"]) for r in examples if r["lang"] == "ja")
    assert english >= 15, "training put the English facts in"  # 23 of 40 measured (32 with the chat turns)
    correctness = majority_vote(pq.read_table(out / "trained" / "judgements.parquet"))
    include, exclude = (eclektic_metrics(correctness, source_rows=reading) for reading in ("include", "exclude"))
    assert (include.transfer.numerator, include.transfer.n) == (english + exclude.transfer.numerator, 2 * english)
    assert exclude.transfer.numerator <= japanese and exclude.transfer.n == english
    assert (out / "trained" / "report.html").is_file() and (out / "leaderboard.html").is_file()
    assert (out / "requests.sqlite").is_file()  # the demo's own request cache, not the user's shared one
    assert "demo finished in" in result.stdout
