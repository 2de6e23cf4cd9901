"""ECLEKTIC for base models (prompt format 'completion'): the few-shot completion prompts of answering, judging
and building, their shots (never the asked question), the run's record of each model's prompt format, the report's
note, and the embedded base model answering real ECLEKTIC-format questions through the completion path."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crossknow.eclektic.answer import answer_questions
from crossknow.eclektic.build_completion import (
    GENERATION_SHOTS,
    answer_parser,
    completion_translation_parser,
    question_completion,
    question_parser,
    translation_completion,
)
from crossknow.eclektic.build_records import BuildConfig
from crossknow.eclektic.completion_prompts import (
    JUDGE_SHOTS,
    SHOTS,
    answer_completion,
    choose_shots,
    judge_completion,
    qa_block,
)
from crossknow.eclektic.examples import EclekticSet, Question, load_eclektic_set
from crossknow.eclektic.judge import judge_answers
from crossknow.eclektic.metrics import eclektic_metrics
from crossknow.eclektic.run import run_eclektic
from crossknow.eclektic.run_config import EclekticConfig
from crossknow.eclektic.shots import INVENTED
from crossknow.generation.ask import CompletionPrompt
from crossknow.generation.structured import StructuredClient
from crossknow.models.generator import AnswerContinuation
from crossknow.report.eclektic_report import BASE_MODEL_NOTE, eclektic_report
from crossknow.store.models_file import MODELS_FILE

from .scripted import QUESTIONS, Scripted, two_question_set
from .test_build import build_with, collection, write_jsonl


def many_question_set(n: int = 8, langs: Sequence[str] = ("en", "ja", "de")) -> EclekticSet:
    """n questions, each in every language of `langs`, question k's source language langs[k % len(langs)]."""
    rows = [Question(f"q{k}", lang, langs[k % len(langs)], f"question {k} in {lang}?", f"answer {k} in {lang}",
                     f"context {k} in {lang}.", None, None) for k in range(n) for lang in langs]
    return EclekticSet("many", "main", rows, {f"q{k}": tuple(langs) for k in range(n)})


# ---- answering ---------------------------------------------------------------------------------------------------


def test_the_shots_never_include_the_asked_question_in_any_language():
    pool = many_question_set()
    for question in pool.questions:
        shots = choose_shots(pool, question)
        assert len(shots) == SHOTS
        own = {(row.question, row.answer) for row in pool.questions if row.q_id == question.q_id}
        assert not own & set(shots)
        in_lang = {(row.question, row.answer) for row in pool.questions if row.lang == question.lang}
        assert set(shots) <= in_lang  # other questions in the asked language
        assert choose_shots(pool, question) == shots  # deterministic


def test_a_set_too_small_falls_back_on_invented_shots_in_the_language():
    eclektic_set = two_question_set()
    question = eclektic_set.question("q1", "ja")
    shots = choose_shots(eclektic_set, question)
    other = eclektic_set.question("q2", "ja")
    assert shots == [(other.question, other.answer), (INVENTED["ja"].questions[0], INVENTED["ja"].answers[0])]
    alone = EclekticSet("one", "main", [question], {"q1": ("ja",)})
    assert choose_shots(alone, question) == list(zip(INVENTED["ja"].questions, INVENTED["ja"].answers, strict=True))


def test_the_answer_prompt_is_shots_then_the_question_stopped_at_the_newline():
    question = QUESTIONS[2]  # q2, en: "Who designed the Forth Bridge?"
    shots = [("Where?\nHere", "There"), ("When?", "Now")]
    prompt = answer_completion("closed-book", question, shots)
    assert prompt == CompletionPrompt("Question: Where? Here\nAnswer: There\n\nQuestion: When?\nAnswer: Now\n\n"
                                      "Question: Who designed the Forth Bridge?\nAnswer:", stop=("\n",))
    hinted = answer_completion("source-language-name", question, shots)
    assert hinted.text.endswith("\n\nAnswer the following question based on your knowledge in English.\n\n"
                                "Question: Who designed the Forth Bridge?\nAnswer:")
    assert "<start_of_turn>" not in hinted.text and qa_block("a", "b") == "Question: a\nAnswer: b"


def test_a_base_model_is_asked_by_completion_and_a_chat_model_by_chat():
    asked: list[str] = []
    base = Scripted(lambda prompt, seed: asked.append(prompt) or " Fowler", prompt_format="completion")
    table = answer_questions(two_question_set(), StructuredClient(base), model="m")
    assert all(r.prompt is not None and not r.messages and r.stop == ("\n",) for r in base.requests)
    assert set(table.column("text").to_pylist()) == {"Fowler"}
    for prompt, (q_id, _, lang) in zip(asked, two_question_set().examples(), strict=True):
        question = two_question_set().question(q_id, lang)
        assert prompt.endswith(qa_block(question.question)) and prompt.count(question.question) == 1
    chat = Scripted(lambda user, seed: "Fowler")
    answer_questions(two_question_set(), StructuredClient(chat), model="m")
    assert all(r.prompt is None and r.messages[-1].content in {q.question for q in QUESTIONS} for r in chat.requests)


def test_a_runs_shots_come_from_the_whole_set_whatever_its_batches(tmp_path):
    """The run asks its set in parts of batch_size questions; the shots are chosen from the whole set."""
    data = write_jsonl(tmp_path / "set.jsonl", [
        {"id": f"{k}:{lang}", "lang": lang, "question": f"question {k} {lang}?", "answer": f"answer{k}",
         "source_lang": "en", "pair_id": str(k)} for k in range(6) for lang in ("en", "ja")])
    prompts = {}
    for batch_size in (1, 6):
        base = Scripted(lambda prompt, seed: " x", prompt_format="completion")
        config = EclekticConfig(data=str(data), model="default", judge_free=["recall"], batch_size=batch_size,
                                cache=str(tmp_path / f"cache{batch_size}.sqlite"))
        run_eclektic(config, tmp_path / f"run{batch_size}", make_generator=lambda spec, options, g=base: g)
        prompts[batch_size] = sorted(r.prompt for r in base.requests)
        models = json.loads((tmp_path / f"run{batch_size}" / MODELS_FILE).read_text(encoding="utf-8"))
        assert models == {"default": {"model": "scripted:m", "prompt_format": "completion"}}
    assert prompts[1] == prompts[6] and len(prompts[1]) == 12


# ---- judging -----------------------------------------------------------------------------------------------------


def test_the_judge_prompt_is_balanced_shots_then_the_answer():
    prompt = judge_completion("The bridge\nwas designed by Fowler.", "Who designed it?", "Fowler")
    assert prompt.text.endswith("\n\nText: The bridge was designed by Fowler.\nQuestion: Who designed it?\n"
                                "Answer: Fowler\nSupported:")
    assert prompt.text.count("Supported: yes") == prompt.text.count("Supported: no") == 2 == len(JUDGE_SHOTS) / 2


class ScoringScripted(Scripted):
    """A scripted base model that scores continuations: P(yes) is `p_yes` of the prompt's answer line."""

    def __init__(self, p_yes):
        super().__init__(lambda prompt, seed: None, prompt_format="completion")
        self.p_yes = p_yes

    def score_answers(self, requests: Sequence[AnswerContinuation]) -> list[float]:
        out = []
        for request in requests:
            answer = request.prompt.rsplit("\nAnswer: ", 1)[1].split("\n")[0]
            p = self.p_yes(answer)
            out.append(math.log(p if request.continuation == " yes" else 1 - p))
        return out


def test_a_base_judge_says_yes_at_p_yes_of_one_half_or_more(tmp_path):
    answers = answer_questions(two_question_set(), StructuredClient(Scripted(lambda u, s: "1633")), model="m")
    rows = answers.to_pylist()
    rows[1]["text"], rows[2]["text"], rows[3]["text"] = "In 1633", "Gustave Eiffel", ""
    answers = pa.Table.from_pylist(rows, schema=answers.schema)
    levels = {"1633": 0.5, "In 1633": 0.9, "Gustave Eiffel": 0.4999}
    judge = ScoringScripted(lambda answer: levels[answer])
    table = judge_answers(answers, two_question_set(), {"default": StructuredClient(judge)})
    got = [(row["verdict"], row["raw"]) for row in table.to_pylist()]
    assert got == [(True, "0.5000"), (True, "0.9000"), (False, "0.4999"), (False, "")]  # the empty answer: no call


def test_a_base_judge_that_cannot_score_reads_the_word_it_writes():
    answers = answer_questions(two_question_set(), StructuredClient(Scripted(lambda u, s: "1633")), model="m")
    judge = Scripted(lambda prompt, seed: " yes" if "1633" in prompt.rsplit("Text:", 1)[1].split("\n")[0] else " maybe",
                     prompt_format="completion")
    table = judge_answers(answers, two_question_set(), {"j": StructuredClient(judge, max_attempts=2)})
    verdicts = [row["verdict"] for row in table.to_pylist()]
    assert verdicts == [True, True, None, None]  # "maybe" is neither: invalid, never a NO
    assert all(r.prompt.endswith("\nSupported:") for r in judge.requests)


# ---- building ----------------------------------------------------------------------------------------------------


def test_the_build_prompts_ask_one_field_each():
    question = question_completion("A paragraph\nin two lines.")
    assert question.stop == ("\n",)
    assert question.text.endswith("\n\nParagraph: A paragraph in two lines.\nQuestion:")
    assert question.text.count("Paragraph: ") == 1 + len(GENERATION_SHOTS) and "Answer:" not in question.text
    translation = translation_completion("ja", "en", "古い橋")
    first = f"Japanese: {INVENTED['ja'].questions[0]}\nEnglish: {INVENTED['en'].questions[0]}\n\n"
    assert translation.text.startswith(first)
    assert translation.text.endswith("\n\nJapanese: 古い橋\nEnglish:")


BRIDGE = "The bridge was built by John Fowler."
BURG = "Die Burg liegt über dem Tal. Die Burg wurde 1200 erbaut. Sie gehörte den Grafen von Tal."


@pytest.mark.parametrize(("parse", "text", "valid"), [
    (question_parser(BRIDGE), " Who built the bridge?", True),
    (question_parser(BRIDGE), " ", False),
    (question_parser(BRIDGE), " " + GENERATION_SHOTS[0][1], False),  # echoes a shot
    (question_parser(BRIDGE), " Who built it? Answer: Fowler", False),  # goes on past its field
    (answer_parser(BRIDGE, "Who built it?"), " Fowler", True),
    (answer_parser(BRIDGE, "Who built it?"), " Gustave Eiffel", False),  # not grounded
    (answer_parser("清水寺の本堂は1633年に再建された。", "清水寺の本堂は何年に再建されたか？"), " 1633年", True),
    (question_parser(BURG), " Die Burg wurde 1200 erbaut.", False),  # a sentence of the paragraph, copied
    (question_parser(BURG), " Wann wurde die Burg erbaut?", True),
    (question_parser("清水寺の本堂は1633年に再建された。"), " 清水寺の本堂は1633年に再建された。", False),
    (answer_parser(BRIDGE, "Who built it?"), " a banana", False),  # "a" grounds nothing
    (answer_parser(BRIDGE, "Who built it?"), " John Fowler", True),
    (answer_parser(BRIDGE, "Who built the bridge?"),
     " Who built the bridge?", False),  # echoes the question
    (answer_parser(BRIDGE, "Who built the bridge?"),
     " the bridge", False),  # the question mentions its answer
    (answer_parser(BRIDGE, "Who built the bridge?"), " Fowler", True),
    (answer_parser("清水寺の本堂は1633年に再建された。", "清水寺の本堂は何年に再建されたか？"), " 清水寺の本堂", False),
    (completion_translation_parser("en", "de", "The bridge is old and very long."), " Die Brücke ist alt.", True),
    (completion_translation_parser("en", "de", "The bridge is old and very long."),
     " The bridge is old and very long.", False),  # a copy
    (completion_translation_parser("en", "de", "John Fowler"), " John Fowler", True),  # a name stays as it is
    (completion_translation_parser("en", "de", "Fowler"), " " + INVENTED["de"].answers[0], False),  # an echo
    (completion_translation_parser("en", "de", "Fowler"), " Fowler German: Fowler", False),
])
def test_the_build_parsers_reject_echoes_copies_and_ungrounded_answers(parse, text, valid):
    value, error = parse(text)
    assert (value is not None, error is None) == (valid, valid)


def test_a_base_model_builds_by_fields(tmp_path):
    """The question, then the answer, then each translated field: one call each, all completion prompts."""
    def reply(prompt: str, seed: int) -> str:
        last = prompt.rsplit("\n\n", 1)[1]
        if last.endswith("\nQuestion:"):
            return " What does the article tell?"
        if last.endswith("\nAnswer:"):
            return " " + last.split("Paragraph: ", 1)[1].split()[0]
        return " " + last.split(": ", 1)[1].split("\n")[0][::-1]  # a "translation": the text reversed

    generator = Scripted(reply, prompt_format="completion")
    docs = write_jsonl(tmp_path / "docs.jsonl", collection())
    config = BuildConfig(model="writer", documents=str(docs), languages=["en", "ja", "he"], per_language=1, seed=7,
                         max_attempts=1)
    result = build_with(config, generator, tmp_path / "cache.sqlite", tmp_path / "build")
    assert all(r.prompt is not None and r.stop == ("\n",) for r in generator.requests)
    assert result.summary.questions == 3 and result.summary.invalid == {"generate": 0, "translate": 0,
                                                                         "back-translate": 0}
    built = result.questions[0]
    assert built.source.question == "What does the article tell?"
    assert built.source.answer == built.source.context.split()[0]


# ---- the report --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("model", "models", "noted"), [
    ("default", {}, True),
    ("hf:/x/checkpoint-45", {"hf:/x/checkpoint-45": {"model": "hf:/x", "prompt_format": "completion"}}, True),
    ("openai:gpt-4o", {"openai:gpt-4o": {"model": "openai:gpt-4o", "prompt_format": "chat"},
                       "default": {"model": "default:gemma", "prompt_format": "completion"}}, True),  # a base judge
    ("openai:gpt-4o", {"openai:gpt-4o": {"model": "openai:gpt-4o", "prompt_format": "chat"}}, False),
    ("openai:gpt-4o", {"openai:gpt-4o": "openai:gpt-4o"}, False),  # a run recorded before prompt formats
])
def test_a_base_models_report_says_first_that_it_checks_the_machinery(tmp_path, model, models, noted):
    rows = [{"q_id": "q1", "source_lang": "en", "lang": lang, "correct": True} for lang in ("en", "ja")]
    path = eclektic_report(eclektic_metrics(rows), tmp_path, model=model, meta={"models": models})
    lead = path.read_text(encoding="utf-8").split('class="lead">', 1)[1]
    assert lead.startswith(BASE_MODEL_NOTE.strip()[:40]) == noted


# ---- the embedded base model ---------------------------------------------------------------------------------------

REAL_QUESTIONS = [
    # the paper's own examples (section 1, Appendix A.1), in ECLEKTIC's released format
    ("1", "de", "Wer synchronisiert Brad Pitt in deutschen Filmen?", "Tobias Meister",
     "Who dubs Brad Pitt in German films?", "Tobias Meister"),
    ("2", "de", "Gegen wen verlor Ronnie O'Sullivan im Viertelfinale der Snooker-Weltmeisterschaft 2023?",
     "Luca Brecel",
     "Whom did Ronnie O'Sullivan lose to in the quarter-final of the 2023 World Snooker Championship?", "Luca Brecel"),
    ("3", "en", "Wo liegt das Great Barrier Reef?", "Im Korallenmeer vor der Küste von Queensland, Australien",
     "Where is the Great Barrier Reef located?", "Coral Sea, off the coast of Queensland, Australia"),
]


@pytest.mark.slow
def test_the_embedded_base_model_answers_through_the_completion_path(embedded_generator, tmp_path):
    """`default` answers by completion: one line each, no chat markup, no echoed "Question:"; models.json says so."""
    records = [{"q_id": q_id, "original_lang": source, "title": "t", "url": "u", "content": "c", "question": "q",
                "answer": "a", "de_q": de_q, "de_a": de_a, "de_c": f"{de_q} {de_a}.", "en_q": en_q, "en_a": en_a,
                "en_c": f"{en_q} {en_a}."} for q_id, source, de_q, de_a, en_q, en_a in REAL_QUESTIONS]
    data = tmp_path / "eclektic.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    assert len(load_eclektic_set(data, variant="popular").examples()) == 6
    config = EclekticConfig(data=str(data), model="default", variant="popular", judge_free=["recall"], max_tokens=24,
                            cache=str(tmp_path / "requests.sqlite"))
    run_eclektic(config, tmp_path / "run", make_generator=lambda spec, options: embedded_generator)
    answers = pq.read_table(tmp_path / "run" / "answers.parquet").to_pylist()
    assert len(answers) == 6 and all(row["error"] is None for row in answers)
    for row in answers:
        text = row["text"]
        assert "\n" not in text and "<start_of_turn>" not in text and "<end_of_turn>" not in text
        assert "Question:" not in text and "Answer:" not in text
    models = json.loads((tmp_path / "run" / MODELS_FILE).read_text(encoding="utf-8"))
    assert models["default"]["prompt_format"] == "completion"
