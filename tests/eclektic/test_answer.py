"""Answering: the answers table, samples and seeds, invalid answers kept (scripted generator), then the
whole answer -> judge -> vote chain against the real llama.cpp chat server in all five settings."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

from crossknow.eclektic.answer import ANSWER_SCHEMA, AnswerRow, answer_questions, parse_answer
from crossknow.eclektic.examples import EclekticSet, load_eclektic_set
from crossknow.eclektic.judge import majority_vote, parse_verdict
from crossknow.eclektic.judge_free import judge_by_recall
from crossknow.eclektic.prompts import SETTINGS
from crossknow.errors import CrossknowError
from crossknow.generation.pricing import ModelPrice, PriceTable
from crossknow.generation.structured import StructuredClient
from crossknow.store.request_cache import RequestCache

from .scripted import Scripted, two_question_set


def test_the_answers_table_has_one_row_per_example_and_sample_and_keeps_invalid_answers():
    def reply(user: str, seed: int) -> str | None:
        if user.startswith("Who designed"):
            return None  # transport failure
        if user.startswith("フォース橋") and seed < 102:
            return "  \n"  # sample 0 (seed 100): whitespace only, an empty answer, kept as it is
        if user.startswith("清水寺"):
            return ""  # always empty
        return f" answer with seed {seed} "

    generator = Scripted(reply)
    prices = PriceTable({"m": ModelPrice(prompt=1.0, completion=10.0)})
    client = StructuredClient(generator, prices=prices, temperature=0.7, seed=100, max_attempts=3)
    seen: list[tuple[int, int, int]] = []
    table = answer_questions(two_question_set(), client, model="scripted:m", n_samples=2, batch_size=3,
                             on_progress=lambda done, total, meter: seen.append((done, total, meter.calls)))
    assert table.schema == ANSWER_SCHEMA and ANSWER_SCHEMA.names == list(AnswerRow.model_fields)
    rows = table.to_pylist()
    # 4 examples x 2 samples, in example order (source row first), none dropped
    assert [(r["q_id"], r["lang"], r["sample"]) for r in rows] == [
        ("q1", "ja", 0), ("q1", "ja", 1), ("q1", "en", 0), ("q1", "en", 1),
        ("q2", "en", 0), ("q2", "en", 1), ("q2", "ja", 0), ("q2", "ja", 1),
    ]
    assert {r["source_lang"] for r in rows if r["q_id"] == "q1"} == {"ja"}
    assert all(r["setting"] == "closed-book" and r["model"] == "scripted:m" and r["temperature"] == 0.7
               for r in rows)
    # sample s starts at seed 100 + 3 s (3 attempts each), so no two samples share a seed
    assert [r["seed"] for r in rows] == [100, 103] * 4
    by_key = {(r["q_id"], r["lang"], r["sample"]): r for r in rows}
    ok = by_key["q1", "en", 1]
    assert (ok["text"], ok["error"], ok["attempts"]) == ("answer with seed 103", None, 1)
    assert ok["cost_usd"] == pytest.approx((20 * 1.0 + 2 * 10.0) / 1e6)
    empty = by_key["q1", "ja", 0]
    assert (empty["text"], empty["error"], empty["attempts"]) == ("", None, 1)  # an answer (a wrong one): not retried
    blank = by_key["q2", "ja", 0]
    assert (blank["text"], blank["error"], blank["attempts"]) == ("", None, 1)
    assert by_key["q2", "ja", 1]["attempts"] == 1
    failed = by_key["q2", "en", 0]
    assert failed["text"] is None and failed["error"].startswith("request failed: scripted: connection refused")
    # the user message is the question alone, no system message
    first = generator.requests[0]
    assert [(m.role, m.content) for m in first.messages] == [("user", "清水寺の本堂はいつ再建されましたか？")]
    assert first.json_schema is None and first.temperature == 0.7 and first.max_tokens == client.max_tokens
    # progress after each batch of 3 prompts, with the calls made so far
    assert [(done, total) for done, total, _ in seen] == [(0, 8), (3, 8), (6, 8), (8, 8)]
    assert seen[0][2] == 0 and seen[-1][2] == client.meter.calls


def test_samples_need_a_temperature_and_settings_are_checked():
    client = StructuredClient(Scripted(lambda u, s: "a"))
    with pytest.raises(CrossknowError, match="copies of one greedy answer"):
        answer_questions(two_question_set(), client, model="m", n_samples=2)
    with pytest.raises(CrossknowError, match="unknown answering setting"):
        answer_questions(two_question_set(), client, model="m", setting="hint")
    assert parse_answer("\t Kyoto \n") == ("Kyoto", None) and parse_answer(" \n") == ("", None)


def write_released_file(path) -> None:
    """Two questions in ECLEKTIC's released wide schema, with English and Japanese filled in."""
    import json

    rows = [
        {
            "q_id": 11, "original_lang": "ja", "title": "清水寺", "url": "https://ja.wikipedia.org/wiki/清水寺",
            "content": "清水寺の本堂は1633年に再建された。", "question": "清水寺の本堂はいつ再建されましたか？",
            "answer": "1633年",
            "ja_q": "清水寺の本堂はいつ再建されましたか？", "ja_a": "1633年",
            "ja_c": "清水寺の本堂は1633年に再建された。",
            "en_q": "When was the main hall of Kiyomizu-dera rebuilt?", "en_a": "In 1633",
            "en_c": "The main hall of Kiyomizu-dera was rebuilt in 1633.",
        },
        {
            "q_id": 12, "original_lang": "en", "title": "Forth Bridge",
            "url": "https://en.wikipedia.org/wiki/Forth_Bridge",
            "content": "The Forth Bridge is a railway bridge in Scotland.",
            "question": "In which country is the Forth Bridge?",
            "answer": "Scotland",
            "en_q": "In which country is the Forth Bridge?", "en_a": "Scotland",
            "en_c": "The Forth Bridge is a railway bridge in Scotland.",
            "ja_q": "フォース橋はどの国にありますか？", "ja_a": "スコットランド",
            "ja_c": "フォース橋はスコットランドの鉄道橋である。",
        },
    ]
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


@pytest.mark.nightly
def test_answer_and_judge_end_to_end_on_the_llama_server(llama_chat_server, tmp_path):
    from crossknow.eclektic.judge import judge_answers
    from crossknow.models.registry import ModelOptions, load_generator

    data = tmp_path / "eclektic_constructed.jsonl"
    write_released_file(data)
    eclektic_set: EclekticSet = load_eclektic_set(data, variant="popular")
    assert eclektic_set.examples() == [("11", "ja", "ja"), ("11", "ja", "en"), ("12", "en", "en"), ("12", "en", "ja")]

    options = ModelOptions(base_url=llama_chat_server, concurrency=2)
    cache_path = tmp_path / "requests.sqlite"

    def run() -> tuple[dict[str, pa.Table], pa.Table, list[StructuredClient]]:
        cache = RequestCache(cache_path)
        answerer = StructuredClient(load_generator("openai:gemma-3-270m", options), cache, max_tokens=24)
        answers = {s: answer_questions(eclektic_set, answerer, model="openai:gemma-3-270m", setting=s)
                   for s in SETTINGS}
        judges = {spec: StructuredClient(load_generator(spec, options), cache, max_tokens=8, max_attempts=2)
                  for spec in ("openai:judge-a", "openai:judge-b")}
        judgements = judge_answers(answers["closed-book"], eclektic_set, judges)
        return answers, judgements, [answerer, *judges.values()]

    answers, judgements, clients = run()
    for setting, table in answers.items():
        rows = table.to_pylist()
        assert len(rows) == 4 and {r["setting"] for r in rows} == {setting}
        for row in rows:  # each answer is either text or a recorded reason, never dropped
            assert (row["text"] is None) != (row["error"] is None), row
            assert row["text"] is None or row["text"] == row["text"].strip()
    assert clients[0].meter.calls >= 5 * 4 and clients[0].meter.cached_calls == 0

    rows = judgements.to_pylist()
    assert len(rows) == 4 * 2 and {r["judge"] for r in rows} == {"openai:judge-a", "openai:judge-b"}
    for row in rows:
        if row["attempts"] == 0:  # the answer itself was invalid: no judge was asked
            assert row["verdict"] is None and row["error"].startswith("the answer is invalid")
            continue
        verdict, error = parse_verdict(row["raw"])  # the stored verdict is the strict parse of the last output
        assert row["verdict"] == verdict
        assert row["error"] is None if error is None else row["error"].startswith(error)  # + a max_tokens note
        assert row["verdict"] is not None or row["attempts"] == 2  # an invalid verdict was retried first
    votes = majority_vote(pa.concat_tables([judgements, judge_by_recall(answers["closed-book"], eclektic_set)]))
    assert votes.num_rows == 4 and set(votes.column("n_judges").to_pylist()) == {3}

    # the same run again: everything comes from the cache, no new call, the same tables
    again_answers, again_judgements, again_clients = run()
    assert sum(c.meter.calls for c in again_clients) == 0
    assert sum(c.meter.cached_calls for c in again_clients) == sum(
        c.meter.calls + c.meter.cached_calls for c in clients
    )
    for setting in SETTINGS:
        assert again_answers[setting].column("text").to_pylist() == answers[setting].column("text").to_pylist()
    assert again_judgements.column("verdict").to_pylist() == judgements.column("verdict").to_pylist()
    assert all(r["cached"] for r in again_judgements.to_pylist() if r["attempts"])
    assert all(r["cached"] for table in again_answers.values() for r in table.to_pylist())


def test_the_docs_count_an_empty_answer_wrong_as_the_code_does():
    """docs/eclektic.md must not call an empty answer invalid: `parse_answer` keeps it as an answer ("")."""
    assert parse_answer("  \n") == ("", None)
    page = " ".join((Path(__file__).resolve().parents[2] / "docs" / "eclektic.md").read_text(encoding="utf-8").split())
    assert re.search(r"An empty answer is a wrong answer", page)
    called_invalid = re.search(r"empty (?:or \w+ )?answers? (?:is|are)[^.;(]*\binvalid", page, re.IGNORECASE)
    assert called_invalid is None, called_invalid
