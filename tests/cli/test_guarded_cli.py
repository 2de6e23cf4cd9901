"""Malformed input files at the command line: one `error:` line naming the file, exit status 2, no traceback."""

from __future__ import annotations

import json

import pytest

from tests.cli.in_process import user_error

DEEP = "[" * 100_000 + "]" * 100_000
ITEM = {"id": "q1", "lang": "en", "kind": "question", "prompt": "Q?", "options": ["a", "b"], "answer": 0}
JUDGEMENT = {"q_id": "q1", "source_lang": "en", "target_lang": "en", "correct": True}


@pytest.mark.parametrize(
    ("record", "command"),
    [(ITEM, ["evaluate", "--data"]), (JUDGEMENT, ["eclektic", "score", "--judgements"])],
    ids=["evaluate", "eclektic-score"],
)
def test_a_deeply_nested_value_is_one_error_line(tmp_path, monkeypatch, capsys, record, command):
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps(record) + "\n" + json.dumps(record)[:-1] + f', "extra": {DEEP}}}\n', encoding="utf-8")
    out = tmp_path / "out"
    stderr = user_error(monkeypatch, capsys, tmp_path, *command, str(path), "--out", str(out))
    assert f"error: {path}, line 2: " in stderr and "nested more than" in stderr
    assert not (out / "metrics.json").exists()


PAIR = {"question": "Q?", "choices": ["a", "b"], "answer": "a", "transquestion": "Q?", "transchoices": ["x", "y"],
        "transanswer": "x", "oriquestion": "Q?"}
DOCUMENT = {"id": "d1", "lang": "en", "text": "Water is wet.", "metadata": {"pair_id": "p1"}}


def _lines(*records: dict) -> str:
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


MALFORMED = {
    # (command before the file, file name, file text, after the file, words of the message)
    "evaluate-string-answer": (["evaluate", "--data"], "items.jsonl", _lines(ITEM, ITEM | {"id": "q2", "answer": "1"}),
                               [], "line 2: field 'answer': Input should be a valid integer"),
    "evaluate-same-options": (["evaluate", "--data"], "items.jsonl", _lines(ITEM | {"options": ["a", "a"]}), [],
                              "line 1: field 'options': option 1 ('a') repeats option 0"),
    "evaluate-truncated": (["evaluate", "--data"], "items.jsonl", _lines(ITEM)[:-9], [], "line 1: invalid JSON"),
    "eclektic-score-nan": (["eclektic", "score", "--judgements"], "judgements.jsonl",
                           _lines(JUDGEMENT).replace("true", "NaN"), [], "line 1: field 'correct': NaN is no JSON"),
    "eclektic-score-not-utf8": (["eclektic", "score", "--judgements"], "judgements.jsonl",
                                _lines(JUDGEMENT).replace("q1", "q\udcff"), [], "line 1: byte 11 (0xff) is not UTF-8"),
    "pitfalls-eval-list-origin": (["pitfalls", "eval", "--pairs"], "Japanese.json",
                                  json.dumps([PAIR | {"oriquestion": ["a", "list"]}]), ["--model", "default"],
                                  "line 1: field 'oriquestion': expected a string, found a list"),
    "pitfalls-eval-truncated": (["pitfalls", "eval", "--pairs"], "Japanese.json", json.dumps([PAIR])[:-2],
                                ["--model", "default"], "invalid JSON"),
    "generate-language-name": (["generate", "--corpus"], "corpus.jsonl",
                               _lines(DOCUMENT, DOCUMENT | {"id": "d2", "lang": "english"}),
                               ["--detector", "default", "--writer", "default"],
                               "line 2: field 'lang': 'english' is not a language tag"),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_a_malformed_file_is_one_error_line_at_every_command(tmp_path, monkeypatch, capsys, case):
    before, name, text, after, words = MALFORMED[case]
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    out = tmp_path / "out"
    stderr = user_error(monkeypatch, capsys, tmp_path, *before, str(path), *after, "--out", str(out))
    assert f"error: {path}, " in stderr and words in stderr
    assert not (out / "metrics.json").exists()


@pytest.mark.parametrize("text", ["", " \n\t\n"], ids=["empty", "white-space"])
def test_an_empty_judgements_file_is_refused_by_eclektic_score(tmp_path, monkeypatch, capsys, text):
    path = tmp_path / "judgements.jsonl"
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    stderr = user_error(monkeypatch, capsys, tmp_path, "eclektic", "score", "--judgements", str(path), "--out",
                        str(out))
    assert f"error: {path}: the file is empty" in stderr
    assert not (out / "metrics.json").exists()
