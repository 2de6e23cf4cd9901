"""Evaluation on pairs: the release's flaws counted independently, the 2x2 scores, runs that resume."""

from __future__ import annotations

import json
from collections import Counter

import pyarrow.parquet as pq
import pytest

from crossknow.data.pitfalls import LANGUAGE_CODES
from crossknow.errors import InputError
from crossknow.pitfalls.eval_records import PairRow, PitfallsEvalConfig
from crossknow.pitfalls.evaluation import model_language_scores, run_pitfalls_eval
from crossknow.pitfalls.flaws import read_pair_file
from crossknow.pitfalls.simulate import LossSimulator

from ..conftest import SHARED_DATA

RELEASE = SHARED_DATA / "cross-lingual-pitfalls"
needs_release = pytest.mark.skipif(not RELEASE.exists(), reason=f"{RELEASE} is not present")


def _independent_flaws(pair: dict) -> set[str]:
    """The four invalidities of a released pair (choice count, missing answer, answer index, empty choice) and a
    repeated choice, written out again from the field names."""
    en, tr = pair["choices"], pair["transchoices"]
    found = set()
    if len(en) != len(tr):
        found.add("choice_count")
    if pair["answer"] not in en or pair["transanswer"] not in tr:
        found.add("answer_missing")
    else:
        where = [k for k in range(len(tr)) if tr[k] == pair["transanswer"]]
        if where != [en.index(pair["answer"])]:
            found.add("answer_index")
    if [c for c in en + tr if c.strip() == ""]:
        found.add("empty_choice")
    if len(set(en)) < len(en) or len(set(tr)) < len(tr):
        found.add("duplicate_choice")
    return found


@needs_release
def test_release_flaws_and_cap_violations_from_an_independent_count():
    totals, union, readme, issue = Counter(), 0, 0, 0
    for language in LANGUAGE_CODES:
        pairs = json.loads((RELEASE / f"{language}.json").read_text(encoding="utf-8"))
        flaws = [_independent_flaws(pair) for pair in pairs]
        per_language = Counter(code for found in flaws for code in found)
        read = read_pair_file(RELEASE / f"{language}.json")
        assert {code: n for code, n in read.flaw_counts.items() if n} == dict(per_language)
        assert len(read.invalid) == sum(1 for found in flaws if found) and read.n_read == len(pairs)
        assert [record.line for record in read.invalid] == [k + 1 for k, found in enumerate(flaws) if found]
        totals += per_language
        union += sum(1 for found in flaws if found)
        readme += sum(pair["transanswer"] not in pair["transchoices"] for pair in pairs)
        issue += sum(bool(found & {"answer_missing", "empty_choice"}) for found in flaws)
        # the cap: original questions with more than k = 3 pairs
        per_origin = Counter(pair["oriquestion"] for pair in pairs)
        over = {origin: n for origin, n in per_origin.items() if n > 3}
        assert read.cap_violations == {LANGUAGE_CODES[language]: over}
        if language in ("Korean", "Chinese"):  # the README: up to 82 pairs from one question in Korean, 22 in Chinese
            assert max(over.values()) == {"Korean": 82, "Chinese": 22}[language]
    assert readme == totals["answer_missing"] == 238  # the README's count
    assert totals["empty_choice"] == 36
    assert issue == 274  # missing answer or empty choice: 238 + 36 (disjoint)
    assert totals["choice_count"] == 64  # every one of them also lacks its answer among the choices
    assert totals["answer_index"] == 27  # counted by neither: the translated answer at another (or a second) index
    assert totals["duplicate_choice"] == 76  # a side holding one choice twice: 53 pairs with no other flaw
    assert union == 354


def _row(model, lang, en, target, pair="p"):
    cell = None if en is None or target is None else f"{'right' if en else 'wrong'}_{'right' if target else 'wrong'}"
    return PairRow(pair_id=pair, model=model, lang=lang, source=None, category=None, answer=0,
                   en_choice=None if en is None else (0 if en else 1),
                   target_choice=None if target is None else (0 if target else 1), en_correct=en,
                   target_correct=target, cell=cell, en_error=None if en is not None else "bad", target_error=None
                   if target is not None else "bad", en_raw=None, target_raw=None)


def test_scores_leave_invalid_pairs_out_of_both_accuracies():
    rows = [_row("m", "zh", True, False), _row("m", "zh", True, False), _row("m", "zh", True, True),
            _row("m", "zh", False, False), _row("m", "zh", True, None), _row("m", "zh", None, False),
            _row("n", "zh", True, True)]
    first, second = model_language_scores(rows)
    # m: 4 scored pairs; English right in 3, target right in 1; 2 invalid pairs are not wrong answers
    assert (first.n_pairs, first.n_scored, first.n_invalid) == (6, 4, 2)
    assert first.english_accuracy == 0.75 and first.target_accuracy == 0.25 and first.drop == 0.5
    assert first.cells == {"right_wrong": 2, "right_right": 1, "wrong_right": 0, "wrong_wrong": 1}
    assert (second.model, second.english_accuracy, second.drop) == ("n", 1.0, 0.0)


def _item(item_id, lang, pair_id, options, answer, **extra):
    return {"id": item_id, "lang": lang, "kind": "question", "prompt": f"question {item_id}?", "options": options,
            "answer": answer, "pair_id": pair_id, **extra}


def test_item_file_pairs_and_their_flaws(tmp_path):
    lines = [
        _item("e1", "en", "p1", ["a", "b"], 1, metadata={"source_id": "s1"}), _item("j1", "ja", "p1", ["あ", "い"], 1),
        _item("e2", "en", "p2", ["a", "b", "c"], 0), _item("j2", "ja", "p2", ["あ", "い"], 0),
        _item("e3", "en", "p3", ["a", "b"], 0), _item("j3", "ja", "p3", ["あ", "い"], 1),
        _item("e4", "en", "p4", ["a", "b"], 0),
    ]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    read = read_pair_file(path)
    assert [pair.pair_id for pair in read.pairs] == ["p1"] and read.pairs[0].origin == "s1"
    assert read.pairs[0].target.lang == "ja" and read.pairs[0].target.answer == 1
    assert {record.item_id: record.reason.split(":")[0] for record in read.invalid} == {
        "p2": "choice_count", "p3": "answer_index", "p4": "missing_side"}
    lines.append(_item("e5", "en", "p1", ["a", "b"], 0))
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    with pytest.raises(InputError, match="pair 'p1' has 3 items") as info:
        read_pair_file(path)
    assert str(path) in str(info.value) and "pair_id" in str(info.value)


class Counting:
    """A simulator wrapper that counts the questions it is asked."""

    def __init__(self, inner):
        self.inner, self.name, self.asked = inner, inner.name, 0

    def answer(self, questions, resimulation=0):
        self.asked += len(questions)
        return self.inner.answer(questions)


@needs_release
@pytest.mark.slow
def test_loss_run_writes_pairs_and_resumes(tmp_path, embedded_scorer):
    simulator = Counting(LossSimulator("default", embedded_scorer))
    config = PitfallsEvalConfig(pairs=str(RELEASE / "Japanese.json"), models=["default"], limit=3, batch_size=2)
    out = tmp_path / "run"
    metrics = run_pitfalls_eval(config, out, make_simulator=lambda spec, _: simulator)
    assert simulator.asked == 6
    rows = pq.read_table(out / "pairs.parquet").to_pylist()
    assert [row["pair_id"] for row in rows] == ["Japanese:0", "Japanese:1", "Japanese:2"]
    released = json.loads((RELEASE / "Japanese.json").read_text(encoding="utf-8"))
    for row, pair in zip(rows, released, strict=False):
        assert row["answer"] == pair["choices"].index(pair["answer"]) == pair["transchoices"].index(pair["transanswer"])
        assert row["en_correct"] == (row["en_choice"] == row["answer"]) and row["en_raw"] is None
    (scores,) = metrics.scores
    assert scores.english_accuracy == sum(row["en_correct"] for row in rows) / 3
    assert scores.cells["right_wrong"] == sum(row["en_correct"] and not row["target_correct"] for row in rows)
    assert json.loads((out / "metrics.json").read_text())["scores"][0]["n_scored"] == 3

    def refuse(spec, _):
        raise AssertionError("a finished run must not build a simulator")

    assert run_pitfalls_eval(config, out, make_simulator=refuse).scores == metrics.scores
    bigger = config.model_copy(update={"limit": 4})
    run_pitfalls_eval(bigger, out, make_simulator=lambda spec, _: simulator)
    assert simulator.asked == 8  # only the fourth pair was asked
    assert len(pq.read_table(out / "pairs.parquet")) == 4

    from crossknow.report.pitfalls_figures import write_eval_report

    report = write_eval_report(out).read_text(encoding="utf-8")
    assert report.index('id="table-pairs"') < report.index('id="fig-pitfalls_accuracy"')
    assert report.index("<main>") < report.index('id="table-pairs"') < report.index('id="table-flaws"')


@needs_release
# nightly: the same run on a scripted model is the test below, invalid answers are checked in
# tests/pitfalls/test_simulate.py, and the server generator against the real chat server in tests/eclektic/test_run.py
@pytest.mark.nightly
def test_generative_run_records_invalid_answers_and_never_counts_them_wrong(tmp_path, llama_chat_server):
    config = PitfallsEvalConfig(pairs=str(RELEASE / "French.json"), models=["openai:gemma"], answering="generative",
                                limit=2, max_tokens=48, max_attempts=2, base_url=llama_chat_server,
                                cache=str(tmp_path / "cache.sqlite"), concurrency=2)
    metrics = run_pitfalls_eval(config, tmp_path / "run")
    rows = pq.read_table(tmp_path / "run" / "pairs.parquet").to_pylist()
    assert len(rows) == 2 and metrics.templates == {"en": "en", "fr": "fr"}
    assert metrics.prompt_formats == {"openai:gemma": "chat"}  # a server model is asked by chat unless told
    invalid = [row for row in rows if row["en_choice"] is None or row["target_choice"] is None]
    for row in rows:
        for side in ("en", "target"):
            assert row[f"{side}_raw"] is not None  # every output is kept
            assert (row[f"{side}_choice"] is None) == (row[f"{side}_error"] is not None)
            assert (row[f"{side}_correct"] is None) == (row[f"{side}_choice"] is None)
    (scores,) = metrics.scores
    assert scores.n_invalid == len(invalid) and scores.n_scored == 2 - len(invalid)
    assert sum(scores.cells.values()) == scores.n_scored  # an invalid pair sits in no cell
    assert all(row["cell"] is None for row in invalid)
    assert metrics.calls >= 4 and metrics.tokens > 0
    again = run_pitfalls_eval(config, tmp_path / "run")
    assert again.calls == 0 and again.scores == metrics.scores


class CrashAfterAnswering:
    """A simulator wrapper that raises once, on its `crash_on`-th chunk, after its model has answered it (paid and
    cached, never committed): a run killed between the calls and the commit."""

    def __init__(self, inner, crash_on: int):
        self.inner, self.name, self.prompt_format = inner, inner.name, inner.prompt_format
        self.client, self.chunks, self.crash_on = inner.client, 0, crash_on

    def answer(self, questions, resimulation=0):
        answers = self.inner.answer(questions)
        self.chunks += 1
        if self.chunks == self.crash_on:
            raise RuntimeError("killed after the calls, before the commit")
        return answers


@needs_release
def test_a_resumed_run_reports_the_whole_runs_spend_as_an_uninterrupted_one(tmp_path):
    from crossknow.generation.clients import ClientPool, Role
    from crossknow.generation.pricing import ModelPrice, PriceTable
    from crossknow.pitfalls.simulate import GenerativeSimulator
    from crossknow.store.request_cache import RequestCache

    from .scripted_server import ScriptedGenerator

    spec = "openai:sim-a@http://127.0.0.1:9/v1"  # never reached: the scripted model answers in its place

    def simulator(cache):
        pool = ClientPool.over(cache, PriceTable({"sim-a": ModelPrice(prompt=1.0, completion=3.0)}))
        pool.adopt(spec, ScriptedGenerator("sim-a"))
        return GenerativeSimulator.from_pool(spec, pool, spec, Role())

    config = PitfallsEvalConfig(pairs=str(RELEASE / "French.json"), models=[spec], answering="generative",
                                limit=6, batch_size=2)
    with RequestCache(tmp_path / "whole.sqlite") as cache:
        whole = run_pitfalls_eval(config, tmp_path / "whole", make_simulator=lambda spec, _: simulator(cache))
    assert whole.calls == 12 and whole.cost_usd > 0  # a fresh cache: both sides of 6 pairs, once each
    with RequestCache(tmp_path / "killed.sqlite") as cache:
        with pytest.raises(RuntimeError, match="killed"):
            run_pitfalls_eval(config, tmp_path / "killed",
                              make_simulator=lambda spec, _: CrashAfterAnswering(simulator(cache), crash_on=2))
        resumed = run_pitfalls_eval(config, tmp_path / "killed", make_simulator=lambda spec, _: simulator(cache))
    # the resume replayed the second chunk's 4 calls from the cache: it sent only the third chunk's
    assert (resumed.calls, resumed.cached_calls) == (4, 4)
    assert (resumed.run_calls, resumed.run_tokens, resumed.run_cost_usd) == (whole.calls, whole.tokens,
                                                                             whole.cost_usd)
    assert (whole.run_calls, whole.run_tokens, whole.run_cost_usd) == (whole.calls, whole.tokens, whole.cost_usd)
