"""The rules a question-answer pair must pass to be kept (self-contained knowledge questions with substantive
answers), on hand-built examples whose lengths are counted by hand."""

from __future__ import annotations

import pytest

from crossknow.errors import CrossknowError
from crossknow.training.qa_checks import answer_problem, pair_rules, question_problem, repeated, screen_pairs
from crossknow.training.qa_prompts import FEW_SHOT
from crossknow.training.records import QAPair

LEDGER = "The Helvane ledger was begun in 1894 by Ostrid Kael."
LEDGER_JA = "ヘルヴェイン台帳は1894年にオストリッド・カエルが始めた。"


@pytest.mark.parametrize("question", [
    "What did the study find about the Helvane ledger?",
    "According to the text, who began the ledger?",
    "What do the authors conclude?",
    "Which method did this paper use?",
    "What did we measure in 1894?",
    "In this case, which enzyme was inhibited?",
])
def test_an_english_question_that_refers_to_its_document_is_rejected(question: str) -> None:
    assert question_problem(question, LEDGER, "en")[0] == "refers_to_document"  # type: ignore[index]


@pytest.mark.parametrize("question", ["本研究の対象は何か。", "この論文で用いた方法は何か。", "著者らは何を示したか。",
                                      "上記の患者に投与された薬は何か。"])
def test_a_japanese_question_that_refers_to_its_document_is_rejected(question: str) -> None:
    assert question_problem(question, LEDGER_JA, "ja")[0] == "refers_to_document"  # type: ignore[index]


@pytest.mark.parametrize(("question", "lang"), [
    ("Who began the Helvane ledger, and in which year?", "en"),
    ("What does the Framingham Heart Study measure?", "en"),  # names the study: self-contained
    ("What is the US Food and Drug Administration?", "en"),
    ("ヘルヴェイン台帳は誰がいつ始めたか。", "ja"),
    ("日本文学で最も古い物語は何か。", "ja"),  # 日本文 holds 本文, but as part of a word
])
def test_a_self_contained_question_passes(question: str, lang: str) -> None:
    assert question_problem(question, LEDGER if lang == "en" else LEDGER_JA, lang) is None


@pytest.mark.parametrize(("question", "lang"), [
    ("Ostrid Kael began a ledger.", "en"),
    ("Name the founder of the Helvane ledger", "en"),
    ("ヴェルモラスチンは植物アルカロイドである。", "ja"),  # a statement restated: the embedded model's answer
])
def test_a_statement_is_not_a_question(question: str, lang: str) -> None:
    assert question_problem(question, LEDGER if lang == "en" else LEDGER_JA, lang) == (
        "not_a_question", "the question does not end as a question")


def test_a_question_ends_as_a_question_does() -> None:
    for question in ("ヴェルモラスチンとは何か？", "ヴェルモラスチンは何に効くか", "「台帳」を始めたのは誰か。"):
        assert question_problem(question, LEDGER_JA, "ja") is None
    assert question_problem("Who began the Helvane ledger? ", LEDGER, "en") is None


def test_a_question_that_copies_the_document_is_rejected() -> None:
    document = "one two three four five six seven eight nine ten eleven twelve"
    assert question_problem("Why alpha one two three four five six seven eight nine beta?", document, "en") is None
    rule, reason = question_problem("Why alpha one two three four five six seven eight nine ten?", document, "en")  # type: ignore[misc]
    assert rule == "copies_document" and "10 words" in reason
    rule, reason = question_problem("The Helvane ledger was begun in 1894?", LEDGER, "en")  # type: ignore[misc]
    assert rule == "copies_document" and "stretch of the document" in reason

    kana = "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほ"  # 30 characters, 25th is の
    assert question_problem(f"「{kana[:24]}」とは何か。", kana, "ja") is None
    rule, reason = question_problem(f"「{kana[:25]}」とは何か。", kana, "ja")  # type: ignore[misc]
    assert rule == "copies_document" and "25 characters" in reason


def test_a_short_answer_or_a_short_span_copied_from_the_document_is_rejected() -> None:
    assert answer_problem("Ostrid Kael.", LEDGER, "en") == (
        "short_answer", "the answer has 2 words (crossknow's minimum: 4)")
    rule, reason = answer_problem("was begun in 1894 by Ostrid Kael", LEDGER, "en")  # type: ignore[misc]
    assert rule == "copied_answer" and "7 words" in reason
    assert answer_problem("ledger was begun in 1894 by Ostrid Kael.", LEDGER, "en") is None  # 8 words copied
    assert answer_problem("The Helvane ledger was begun in 1894 by Ostrid Kael.", LEDGER, "en") is None  # 10
    assert answer_problem("Ostrid Kael began the Helvane ledger in 1894.", LEDGER, "en") is None  # 8, own words
    assert answer_problem("In 1894 it was begun.", LEDGER, "en") is None  # 5 words, not one span of the document

    assert answer_problem("カエル。", LEDGER_JA, "ja")[0] == "short_answer"  # type: ignore[index]
    # 1894(4) 年に(2) オストリッド(6) カエル(3) が始めた(4): 19 characters, the middle dot ignored
    rule, reason = answer_problem("1894年にオストリッド・カエルが始めた", LEDGER_JA, "ja")  # type: ignore[misc]
    assert rule == "copied_answer" and "19 characters" in reason
    assert answer_problem(LEDGER_JA, LEDGER_JA, "ja") is None  # the whole sentence: 28 characters


def test_a_repeated_question_is_rejected_by_its_words() -> None:
    earlier = ["When was the Helvane ledger begun?", "Who began the Helvane ledger?"]
    assert repeated("who began the HELVANE ledger", earlier, "en") == (
        "repeated_question", "the same question as question 2")
    assert repeated("Who began the Helvane ledger first?", earlier, "en") is None


def test_screening_keeps_the_pairs_that_pass_and_records_the_others_with_their_reason() -> None:
    pairs = [
        QAPair(question="Who began the Helvane ledger?", answer="Ostrid Kael began the Helvane ledger in 1894."),
        QAPair(question="What does the document say about Kael?", answer="Kael began a ledger in the year 1894."),
        QAPair(question="When was it begun?", answer="1894."),
        QAPair(question="Who began the Helvane ledger?", answer="The ledger was begun by Ostrid Kael in 1894."),
        QAPair(question="In which year was the Helvane ledger begun?", answer="The Helvane ledger dates from 1894."),
    ]
    kept, rejected = screen_pairs(pairs, LEDGER, "en")
    assert kept == [pairs[0], pairs[4]]
    assert [(r.question, r.rule) for r in rejected] == [
        (pairs[1].question, "refers_to_document"), (pairs[2].question, "short_answer"),
        (pairs[3].question, "repeated_question")]
    assert rejected[1].answer == "1894." and "1 word " in rejected[1].reason


def test_the_few_shot_examples_pass_their_own_rules() -> None:
    for lang, shot in FEW_SHOT.items():
        for document, pairs in shot.examples:
            kept, rejected = screen_pairs([QAPair(question=q, answer=a) for q, a in pairs], document, lang)
            assert rejected == [] and len(kept) == len(pairs)


def test_a_language_without_rules_is_an_error() -> None:
    with pytest.raises(CrossknowError, match="no question-answer rules for language 'fr'.*PAIR_RULES"):
        pair_rules("fr")
