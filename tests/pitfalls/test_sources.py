"""Sources of the probe: reading the released source files and crossknow item files, the equal draw by seed
(computed by hand and by a plain re-implementation with `random`), the English prefilter's counts with
scripted simulators, and bad files."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from crossknow.errors import InputError
from crossknow.pitfalls.probe.sources import prefilter, read_source_file, read_source_files, sample_sources, shares
from crossknow.pitfalls.simulate import SimAnswer

RELEASE = Path("/work/shared/data/cross-lingual-pitfalls/source")
ADAXEVAL = Path("/work/shared/data/adaxeval-paper-examples.jsonl")


def released_file(path: Path, count: int, start: int = 0) -> Path:
    """A file in the release's source shape: question q{i}, choices c0..c3, answer the text of c{i % 4}."""
    records = [{"question": f"q{i}", "choices": [f"c{i}-{k}" for k in range(4)], "answer": f"c{i}-{i % 4}",
                "source": "test"} for i in range(start, start + count)]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def test_the_released_sciq_file_reads_every_question_with_its_answer_index():
    source = read_source_file(RELEASE / "sciq.json")
    raw = json.loads((RELEASE / "sciq.json").read_text(encoding="utf-8"))
    # two SciQ records list their answer twice among the choices (positions 767 and 884), seven more another
    # choice twice: reported, not drawn
    repeated = [i + 1 for i, r in enumerate(raw) if len(set(r["choices"])) != len(r["choices"])]
    assert len(repeated) == 9 and {767, 884} <= set(repeated)
    assert len(source.questions) == 988 and [r.line for r in source.invalid] == repeated
    first = source.questions[5]
    assert first.id == "sciq:5" and first.question.question == raw[5]["question"]
    assert first.question.choices[first.question.answer] == raw[5]["answer"] and first.question.lang == "en"


@pytest.mark.parametrize("name", ["commonsense_qa", "truthful_qa", "mmlu", "ai2_arc_easy"])
def test_the_release_flaws_of_each_source_file_are_reported(name):
    raw = json.loads((RELEASE / f"{name}.json").read_text(encoding="utf-8"))
    # an independent count: an answer not exactly once among the choices, an empty choice, a choice repeated
    flawed = [i + 1 for i, r in enumerate(raw) if r["choices"].count(r["answer"]) != 1
              or any(not c.strip() for c in r["choices"]) or len(set(r["choices"])) != len(r["choices"])]
    source = read_source_file(RELEASE / f"{name}.json")
    assert [r.line for r in source.invalid] == flawed
    assert len(source.questions) + len(flawed) == len(raw)


def test_an_item_file_gives_its_english_questions_only():
    # the AdaXEval paper examples: 10 English questions, 10 English cloze items, 20 Japanese items
    source = read_source_file(ADAXEVAL)
    assert len(source.questions) == 10
    assert all(q.question.lang == "en" and "[BLANK]" not in q.question.question for q in source.questions)
    assert source.questions[0].id.startswith("adaxeval-paper-examples:")


def test_shares_split_equally_and_pass_a_shortfall_on():
    # by hand: 12 over sizes 10, 3, 8 -> 4 each, the second has 3, its missing one goes to the first open file
    assert shares([10, 3, 8], 12) == [5, 3, 4]
    assert shares([10, 10], 5) == [3, 2]  # the remainder to the first file
    assert shares([2, 1], 10) == [2, 1]  # never more than there is


def test_the_draw_is_equal_over_files_and_fixed_by_the_seed(tmp_path):
    files = read_source_files([released_file(tmp_path / "alpha.json", 10), released_file(tmp_path / "beta.json", 6)])
    drawn = sample_sources(files, 6, seed=7)
    # a plain re-implementation: 3 from each file, random.Random("seed:name").sample over the file's questions
    expected = [f"alpha:{i}" for i in random.Random("7:alpha").sample(range(10), 3)]
    expected += [f"beta:{i}" for i in random.Random("7:beta").sample(range(6), 3)]
    assert [q.id for q in drawn] == expected
    assert [q.id for q in sample_sources(files, 6, seed=7)] == expected
    assert [q.id for q in sample_sources(files, 6, seed=8)] != expected


def test_a_repeated_file_name_gets_a_unique_name(tmp_path):
    (tmp_path / "b").mkdir()
    files = read_source_files([released_file(tmp_path / "x.json", 2), released_file(tmp_path / "b" / "x.json", 2)])
    assert [f.name for f in files] == ["x", "x#2"] and files[1].questions[0].id == "x#2:0"


class Scripted:
    """Answers right, except wrong on the questions in `wrong` and invalid on those in `invalid`."""

    def __init__(self, name: str, wrong: set[str] = frozenset(), invalid: set[str] = frozenset()):
        self.name, self.wrong, self.invalid = name, wrong, invalid

    def answer(self, questions, resimulation=0):
        answers = []
        for q in questions:
            if q.question in self.invalid:
                answers.append(SimAnswer(None, "junk", "no final_answer"))
            else:
                answers.append(SimAnswer((q.answer + (q.question in self.wrong)) % len(q.choices), None, None))
        return answers


def test_the_prefilter_keeps_what_every_simulator_answers_right_and_counts_the_rest(tmp_path):
    files = read_source_files([released_file(tmp_path / "s.json", 8)])
    # all 8 drawn (in the draw's order); q1 wrong for A, q2 wrong for A and B, q3 invalid for B only,
    # q4 wrong for A and invalid for B (wrong wins: it is a wrong answer), the rest right
    a = Scripted("A", wrong={"q1", "q2", "q4"})
    b = Scripted("B", wrong={"q2"}, invalid={"q3", "q4"})
    kept, report = prefilter(files, 8, 0, [a, b], "scripted")
    assert sorted(q.id for q in kept) == ["s:0", "s:5", "s:6", "s:7"]
    assert (report.drawn, report.kept, report.dropped_wrong, report.dropped_invalid) == (8, 4, 3, 1)
    assert report.wrong_by_simulator == {"A": 3, "B": 1} and report.invalid_by_simulator == {"A": 0, "B": 2}
    assert report.dropped["s:3"] == "invalid answer in English: B"
    assert report.dropped["s:2"] == "wrong in English: A, B"
    assert report.files[0].drawn == 8 and report.files[0].kept == 4 and report.files[0].available == 8
    # without simulators nothing is dropped
    kept, report = prefilter(files, 8, 0, [], "none")
    assert len(kept) == 8 and report.dropped == {}


def test_a_missing_field_names_the_file_position_and_field(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"question": "q", "choices": ["a", "b"], "answer": "a"},
                                {"question": "q2", "answer": "a"}]), encoding="utf-8")
    with pytest.raises(InputError) as error:
        read_source_file(path)
    assert (error.value.path, error.value.line, error.value.field) == (str(path), 2, "choices")


def test_a_choice_of_the_wrong_type_names_its_index(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"question": "q", "choices": ["a", 3], "answer": "a"}]), encoding="utf-8")
    with pytest.raises(InputError) as error:
        read_source_file(path)
    assert (error.value.line, error.value.field) == (1, "choices[1]")


def test_an_answer_outside_the_choices_or_an_empty_choice_is_reported_not_drawn(tmp_path):
    path = tmp_path / "flawed.json"
    path.write_text(json.dumps([
        {"question": "q0", "choices": ["a", "b"], "answer": "c"},
        {"question": "q1", "choices": ["a", " "], "answer": "a"},
        {"question": "q2", "choices": ["a", "a"], "answer": "a"},
        {"question": "q3", "choices": ["a", "b"], "answer": "b"},
    ]), encoding="utf-8")
    source = read_source_file(path)
    assert [q.id for q in source.questions] == ["flawed:3"] and source.questions[0].question.answer == 1
    assert [(r.line, r.field) for r in source.invalid] == [(1, "answer"), (2, "choices"), (3, "answer")]


def test_a_file_without_english_questions_is_an_error(tmp_path):
    path = tmp_path / "ja.jsonl"
    path.write_text(json.dumps({"id": "1", "lang": "ja", "kind": "question", "prompt": "問い", "options": ["a", "b"],
                                "answer": 0}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="no English multiple-choice question"):
        read_source_file(path)
