"""A base model (prompt format 'completion') is asked by crossknow's few-shot completion prompts, and what a weak
writer outputs is caught by code on either path: junk items (such as the prompts' own examples echoed back) must be
rejected, each with the right reason, and the run counts rejections by reason."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from crossknow.adaxeval.checks import MIN_SHARED, blank_object, grounding_problem
from crossknow.adaxeval.distractors import distractor_rows, screen_options
from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.queries import cloze_problem, cloze_rows, paraphrase_rows, question_problem
from crossknow.adaxeval.records import DistractorRecord, GenerateConfig
from crossknow.adaxeval.stages import normalise
from crossknow.adaxeval.triples import triple_rows
from crossknow.generation.overlap import share_in
from crossknow.generation.structured import StructuredClient
from crossknow.models.generator import GenerateRequest, GenerateResult, Usage

from .fake_llm import FakeLLM, default_answer
from .test_items import CALL, _cloze, fact, regenerated

PROMPTS = PromptTable.load()
KESTREL = "The Kestrel Bridge crosses the Arlen river near Dunmore and was opened in 1921."
ISSUE_CLOZE = "Blood sugar level can be controlled by [BLANK]."  # the chat cloze prompt's own example
ISSUE_QUESTION = "Which substance helps manage glycemic levels in the body?"  # the paraphrase prompt's example


def test_the_issues_junk_cloze_is_rejected_with_the_right_reason():
    template = PROMPTS.template("cloze", "en")
    # the prompt's own example, for a fact of another sentence: an echo
    assert cloze_problem(ISSUE_CLOZE, "Kestrel Bridge", KESTREL, template, {}, "k#0").startswith("prompt_echo:")
    # the same cloze judged on grounding alone: its answer is in the sentence, its words are not
    assert grounding_problem(ISSUE_CLOZE, "Kestrel Bridge", KESTREL).startswith("ungrounded_cloze:")
    # an answer the sentence does not hold ("copper histidinate")
    assert grounding_problem("The [BLANK] crosses the Arlen river near Dunmore.", "copper histidinate",
                             KESTREL).startswith("ungrounded_answer:")
    # a faithful cloze passes every check
    faithful = "The [BLANK] crosses the Arlen river near Dunmore and was opened in 1921."
    assert cloze_problem(faithful, "Kestrel Bridge", KESTREL, template, {}, "k#0") is None
    assert share_in(faithful.replace("[BLANK]", " "), KESTREL) == 1.0 > MIN_SHARED


def test_japanese_grounding_counts_characters():
    sentence = "インスリンは血糖値を低下させる。"
    assert grounding_problem("インスリンは[BLANK]を低下させる。", "血糖値", sentence) is None
    assert grounding_problem("オセル川の橋は[BLANK]で建設された。", "血糖値", sentence).startswith("ungrounded_cloze:")


def test_the_issues_junk_question_and_distractors_are_rejected():
    template = PROMPTS.template("paraphrase", "en")
    assert question_problem(ISSUE_QUESTION, "Kestrel Bridge", template, {}, "k#0").startswith("prompt_echo:")
    question = "Which structure spans the Arlen river near Dunmore?"
    assert question_problem(question, "Kestrel Bridge", template, {}, "k#0") is None
    # the same question for two different facts: the second is rejected
    taken = {normalise(question): "other#3"}
    assert question_problem(question, "Kestrel Bridge", template, taken, "k#0").startswith("duplicate:")
    good, dropped = screen_options("Kestrel Bridge", ["Uranus", "Neptune", "Saturn"], [], 0,
                                   PROMPTS.template("distractors", "en"))
    assert good == [] and [d.reason for d in dropped] == ["prompt echo"] * 3


def test_a_cloze_kept_for_one_fact_is_a_duplicate_for_another():
    same = "Insulin lowers the blood glucose level."
    facts = [regenerated(same, key="a-en#0"), regenerated(same, key="b-en#0")]
    rows = cloze_rows(facts, ("w", StructuredClient(FakeLLM(), max_attempts=2)), PROMPTS)
    assert [row.status for row in rows] == ["kept", "invalid"]
    assert rows[1].note.startswith("rejected in 2 round(s): duplicate:")
    assert [r.reason.partition(":")[0] for r in rows[1].record.rejected] == ["duplicate", "duplicate"]


class BaseModel:
    """A scripted base model: it continues completion prompts by `lines` (by the prompt's last line) and says
    yes or no by `yes`; it has no scores, so yes/no is read from the word it writes."""

    name = "base"
    model_id = "base-1"
    prompt_format = "completion"

    def __init__(self, lines: dict[str, list[str]], yes: bool = True) -> None:
        self.lines = {label: list(outputs) for label, outputs in lines.items()}
        self.yes = yes
        self.requests: list[GenerateRequest] = []

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        results = []
        for request in requests:
            self.requests.append(request)
            assert request.prompt is not None and not request.messages
            label = request.prompt.rsplit("\n", 1)[-1]
            outputs = self.lines.get(label)
            text = outputs.pop(0) if outputs else (" yes" if self.yes else " no")
            results.append(GenerateResult(text=text, backend=self.name, model_id=self.model_id, usage=Usage(10, 2)))
        return results


def test_completion_prompts_ask_one_line_each_and_code_builds_the_item():
    echo = "What material was used to construct the bridge at Varenne across the Ossel?"  # the completion example
    base = BaseModel({"Question:": [f" {echo}", " Tell me about insulin.", " What does insulin reduce?"],
                      "Wrong answer:": [" cast iron", " blood pressure", " heart rate", " heart rate",
                                        " body weight\nmore"]})
    client = StructuredClient(base, None, max_attempts=3)
    # the triple is the detector's and the cloze is made by code: no call
    [triple] = triple_rows([fact()], ("w", client), PROMPTS)
    [cloze] = cloze_rows([triple.record], ("w", client), PROMPTS)
    assert (cloze.status, cloze.record.cloze, cloze.record.answer) == (
        "kept", "Insulin lowers [BLANK].", "the blood glucose level")
    assert base.requests == [] and cloze.record.call.attempts == 0
    [query] = paraphrase_rows([cloze.record], ("w", client), PROMPTS)
    assert query.status == "kept" and query.record.question == "What does insulin reduce?"
    assert [r.reason.partition(":")[0] for r in query.record.rejected] == ["prompt_echo", "not_a_question"]
    assert query.record.rejected[0].text == echo  # the model's own text is kept
    asked = base.requests[0]
    assert asked.stop == ("\n",) and asked.temperature == 0.0 and base.requests[1].temperature == 0.7
    assert asked.prompt.endswith("Statement: Insulin lowers [BLANK].\nAnswer: the blood glucose level\nQuestion:")
    [options] = distractor_rows([query.record], ("w", client), PROMPTS)
    assert options.status == "kept"
    assert options.record.distractors == ["blood pressure", "heart rate", "body weight"]
    assert [(d.text, d.reason) for d in options.record.dropped] == [
        ("cast iron", "prompt echo"), ("heart rate", "duplicate")]


def test_completion_quality_judgements_are_yes_no(tmp_path: Path):
    from crossknow.adaxeval.filters import quality_rows
    from crossknow.adaxeval.records import QueryRecord

    query = QueryRecord(cloze_record=_cloze(), reasoning="", question="What does insulin reduce?", call=CALL)
    item = DistractorRecord(query=query, distractors=["blood pressure", "heart rate", "body weight"],
                            length_ratio=0.5, answer_longest=True, call=CALL)
    for yes, status in ((True, "kept"), (False, "dropped")):
        base = BaseModel({}, yes=yes)
        [row] = quality_rows([item], ("w", StructuredClient(base, None)), PROMPTS, lambda p, lang: ("ja", "文書"), True)
        assert row.status == status and len(base.requests) == 5
        assert set(row.record.yes_probability.values()) == {1.0 if yes else 0.0}
        assert row.record.support == (2 if yes else 0)
        assert base.requests[0].prompt.endswith("Same fact:")


LINES = {"Question:": " Which thing is it?", "質問:": " それは何か。",
         "Wrong answer:": " cast iron", "誤答:": " 鋳鉄"}
"""What CompletionFake writes after each label: one question for every fact, and the prompts' own options."""


TRIPLE_LABELS = {"Subject:": "subject", "Relation:": "relation", "Object:": "object",
                 "主語:": "subject", "関係:": "relation", "目的語:": "object"}
"""The triple fields of the completion fact detection, by the label its prompt ends with."""


class CompletionFake(FakeLLM):
    """The pipeline's FakeLLM asked by completion: yes to every fact-detection and quality question, the triple
    FakeLLM would give as JSON one field at a time, and a scripted base model's lines for the rest (one question
    the same for every fact, and junk options)."""

    prompt_format = "completion"

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        chat = [r for r in requests if r.prompt is None]
        answered = iter(super().generate(chat)) if chat else iter(())
        results = []
        for request in requests:
            if request.prompt is None:
                results.append(next(answered))
                continue
            label = request.prompt.rsplit("\n", 1)[-1]
            text = LINES.get(label, " yes")
            if label in TRIPLE_LABELS:
                text = " " + json.loads(default_answer("FactAnswer", request.prompt))["triple"][TRIPLE_LABELS[label]]
            results.append(GenerateResult(text=text, backend=self.name, model_id=self.model_id, usage=Usage(10, 2)))
        return results


def test_a_completion_run_counts_its_rejections_by_reason(run_fake, tmp_path):
    summary, fake = run_fake(fake=CompletionFake(), max_attempts=2)
    # fact detection asked field by field too: no chat request at all, and every fact kept with its triple
    assert all(r.prompt is not None for r in fake.requests)
    shards = (tmp_path / "run/stages/facts").glob("*.parquet")
    facts = [row for path in shards for row in pq.read_table(path).to_pylist()]
    assert facts and all(row["status"] == "kept" for row in facts)
    votes = [vote for row in facts for vote in json.loads(row["record"])["votes"]]
    assert all(v["triple"] and v["confidence"] == 1.0 and v["reasoning"].startswith("not asked") for v in votes)
    assert json.loads((tmp_path / "run/models.json").read_text())["hf:w"] == {"model": "fake:fake-1",
                                                                              "prompt_format": "completion"}
    table = {row.stage: row for row in summary.counts}
    # one question for every fact: only the first fact of each language keeps it, and every option is an echo
    assert table["paraphrase"].counts == {"en": 1, "ja": 1}
    assert table["distractors"].counts == {"en": 0, "ja": 0}
    rejections = summary.rejections
    # each language's query: its first distractor asked twice, an echo each time
    assert rejections["paraphrase"]["duplicate"] > 0 and rejections["distractors"]["prompt_echo"] == 2 * 2
    invalid = [json.loads(line) for line in (tmp_path / "run/invalid.jsonl").read_text().splitlines()]
    echo = next(line for line in invalid if line["stage"] == "distractors")
    assert echo["rejected"][0] == {"text": "cast iron", "reason": "prompt echo"}


@pytest.mark.nightly
@pytest.mark.timeout(900)
def test_generate_with_the_embedded_base_model_keeps_only_grounded_items(tmp_path):
    """End to end with `default` (Gemma 3 270M, a base model: completion) as detector and writer on 4 document pairs
    of the demo corpus: items come out in both languages, every one with its answer in its own sentence, and the
    summary counts the writer's rejections by reason. Uncalibrated, the 270M model's P(yes) after the fact prompt
    was 0.64-0.69 in English and about 0.3 in Japanese for facts and other sentences alike, so no Japanese sentence
    got a triple; calibrated against the content-free prompt, Japanese facts reach 0.6 and more. The sum rule's
    threshold is still lowered and the quality filter off (the 270M judge refuses its own paraphrases): this checks
    the machinery, not the model. About 5 minutes on 2 cores."""
    from crossknow.adaxeval.pipeline import run_generate

    corpus = Path(__file__).resolve().parents[2] / "src/crossknow/samples/demo/corpus.jsonl"
    config = GenerateConfig(corpus=str(corpus), detectors=["default"], writer="default", docs=4, threshold=0.2,
                            max_tokens=128, cache=str(tmp_path / "cache.sqlite"), quality_filter=False)
    summary = run_generate(config, tmp_path / "run")
    assert summary.models["default"]["prompt_format"] == "completion"
    items = [json.loads(line) for path in (tmp_path / "run/dataset").glob("*/*.jsonl")  # en/, ja/: the item sets
             for line in path.read_text(encoding="utf-8").splitlines()]
    assert {item["lang"] for item in items} == {"en", "ja"}, "the writer's stages made no item in a language"
    for item in items:
        meta = item["metadata"]
        assert blank_object(meta["sentence"], meta["correct_answer"]) is not None, item
    assert sum(summary.rejections.get("distractors", {}).values()) > 0  # the model's junk options were caught


BILIARY = ("胆道癌は肝門部領域胆管癌、遠位胆管癌、十二指腸乳頭部癌、胆嚢癌などに分類されるが、"
           "特に肝門部領域胆管癌は手術難易度が高い。")
TABLE_A1 = ["肝細胞癌、膵頭部癌、胃癌、食道癌", "腎細胞癌、膀胱癌、前立腺癌、膵体尾部癌",
            "肺腺癌、大腸癌、直腸癌、膵管癌"]
"""The paper's Table A-1 example: its answer and every one of its options is a list."""


def query_of(sentence: str, answer: str, cloze: str, question: str, lang: str, key: str):
    from crossknow.adaxeval.records import ClozeRecord, QueryRecord

    cloze_record = ClozeRecord(triple_record=regenerated(sentence, answer, lang, key), reasoning="r", cloze=cloze,
                               answer=answer, cloze_similarity=0.9, call=CALL)
    return QueryRecord(cloze_record=cloze_record, reasoning="r", question=question, call=CALL)


class Options:
    """A scripted base model that writes `lines`, one per call, whatever it is asked."""

    name, model_id, prompt_format = "base", "base-1", "completion"

    def __init__(self, lines: list[str]) -> None:
        self.lines, self.requests = list(lines), []

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        self.requests.extend(requests)
        return [GenerateResult(text=self.lines.pop(0), backend=self.name, model_id=self.model_id, usage=Usage(10, 2))
                for _ in requests]


def test_a_base_model_writes_each_distractor_in_a_call_of_its_own_and_a_list_stays_one_option():
    query = query_of(BILIARY, "肝門部領域胆管癌、遠位胆管癌、十二指腸乳頭部癌、胆嚢癌",
                     "胆道癌は[BLANK]などに分類される。", "胆道癌はどのような種類に分類されますか？", "ja", "b-ja#0")
    base = Options([f" {option}" for option in TABLE_A1])
    [row] = distractor_rows([query], ("w", StructuredClient(base, None, max_attempts=3)), PROMPTS)
    assert row.status == "kept" and row.record.distractors == TABLE_A1
    assert len(base.requests) == 3 and all(r.stop == ("\n",) for r in base.requests)
    # each call asks for one more, after those kept so far (code keeps the structure, not the model)
    assert base.requests[2].prompt.endswith(f"\n誤答: {TABLE_A1[0]}\n誤答: {TABLE_A1[1]}\n誤答:")


def test_a_base_models_distractor_is_an_echo_only_when_it_is_a_whole_example_output():
    query = query_of("The Arlen bridge cables are made of copper.", "copper", "The Arlen bridge cables are made of "
                     "[BLANK].", "What are the cables of the Arlen bridge made of?", "en", "a-en#0")
    base = Options([" iron", " cast iron", " steel", " bronze"])  # the example's "cast iron" holds "iron"
    [row] = distractor_rows([query], ("w", StructuredClient(base, None, max_attempts=3)), PROMPTS)
    assert row.status == "kept" and row.record.distractors == ["iron", "steel", "bronze"]
    assert [(d.text, d.reason) for d in row.record.dropped] == [("cast iron", "prompt echo")]


def test_a_chat_writers_options_are_an_echo_only_when_they_are_the_examples_list():
    template = PROMPTS.template("distractors", "en")
    # "Saturn" is one of the example's options, "number" a word of its instructions: neither is an echo
    good, dropped = screen_options("Jupiter", ["Saturn", "number", "Mars"], [], 0, template)
    assert good == ["Saturn", "number", "Mars"] and dropped == []
    good, dropped = screen_options("Kestrel Bridge", ["Uranus", "neptune", "Saturn."], [], 0, template)
    assert good == [] and [d.reason for d in dropped] == ["prompt echo"] * 3


def test_the_example_outputs_are_read_from_either_kind_of_prompt():
    from crossknow.adaxeval.checks import example_outputs

    assert example_outputs(PROMPTS.template("distractors", "ja"), "distractors") == [["土星", "海王星", "天王星"]]
    assert example_outputs(PROMPTS.template("cloze", "en"), "cloze") == [ISSUE_CLOZE]
    assert example_outputs(PROMPTS.template("distractors_fields", "ja"), "distractors") == [
        "鋳鉄", "切り石", "集成材", "ジギタリスのチンキ", "からしの湿布", "イラクサの根の煎じ薬"]
    assert example_outputs(PROMPTS.template("paraphrase_fields", "en"), "question") == [
        "What material was used to construct the bridge at Varenne across the Ossel?",
        "Which remedy do people of the Tolland valley use against marsh fever?"]
