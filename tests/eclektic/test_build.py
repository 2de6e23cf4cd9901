"""Building a new ECLEKTIC-style set: the paper's A.1 prompts, the strict parsers, the filters on a
constructed collection (counts by hand), the pivot check's chrF, the review sheet's round trip through
`read_eclektic`, the build's bookkeeping with a scripted generator, and one real build against the
llama.cpp chat server."""

from __future__ import annotations

import csv
import json
import random
import re
from pathlib import Path

import pytest

from crossknow.data.eclektic import read_eclektic
from crossknow.eclektic.build import build_role, build_set
from crossknow.eclektic.build_documents import context_of, read_documents, select_documents
from crossknow.eclektic.build_pivot import Texts, chrf, pivot_check
from crossknow.eclektic.build_prompts import (
    GENERATION_TEMPLATE,
    TRANSLATION_TEMPLATE,
    GeneratedQA,
    generation_prompt,
    parse_question_answer,
    question_answer_parser,
    translation_parser,
    translation_prompt,
)
from crossknow.eclektic.build_records import BuildConfig
from crossknow.eclektic.examples import load_eclektic_set
from crossknow.eclektic.review_sheet import SHEET_COLUMNS, import_sheet
from crossknow.errors import CrossknowError, InputError
from crossknow.generation.clients import ClientPool
from crossknow.generation.pricing import ModelPrice, PriceTable

from .scripted import Scripted

PAPER = Path(__file__).resolve().parents[2].parent / "shared" / "papers" / "eclektic.md"

# ---- the prompts of Appendix A.1 -------------------------------------------------------------------

EXPECTED_GENERATION_DE = """**Task:** Formulate a question in German that requires a deep understanding of a given German Wikipedia paragraph.

**Requirements:**

* **Context-Specific:** The question must be answerable solely through information presented within the paragraph, excluding general knowledge or common sense.

* **Self-Contained:** The question should be completely self-explanatory, providing all necessary context within its phrasing. Assume the reader has no access to the paragraph when answering the question.

* **Single Concrete Factual Detail:**

- The question should not require multiple answers or involve listing multiple details.

- Avoid asking about opinions, interpretations.

- In you can't answer the question, prefer to generate another question.

- Focus on extracting a specific, concrete, factual detail that the paragraph directly states.

- Be specific:

- If you are asking about an entity be clear about it – Use full names for example.

- Mention expected granularity: If you are asking about a date, instead of asking "when", ask for a decade, year, month, date etc. If you are asking about a location, instead of asking "where", ask for a country, state, city, street, landmark etc.

- Avoid asking questions that their answers are acronyms.

Even for non-English examples keep the convention of using the English words "Paragraph", "Response", "question" and "answer" for specifying the parts being generated.

Generate only the question and answer. No need to continue with additional examples.

**Examples:**

Paragraph: The Great Barrier Reef is the world's largest coral reef system, composed of over 2,900 individual reefs and 900 islands stretching for over 2,300 kilometers (1,400 mi) over an area of approximately 344,400 square kilometers (133,000 sq mi). The reef is located in the Coral Sea, off the coast of Queensland, Australia. The Great Barrier Reef can be seen from outer space and is the world's biggest single structure made by living organisms.

Response: Question: Where is the Great Barrier Reef located? Answer: Coral Sea, off the coast of Queensland, Australia

Paragraph: Die Cazoo Snookerweltmeisterschaft 2023 wurde vom 15. April bis 1. Mai im Crucible Theatre in Sheffield ausgetragen. Mit ihr endete die Saison 2022/23 der World Snooker Tour.[1] Titelverteidiger Ronnie O'Sullivan scheiterte im Viertelfinale gegen Luca Brecel. Der Belgier erreichte das Finale und schlug dort den vierfachen Weltmeister Mark Selby mit 18:15. Brecel ist damit der erste Kontinentaleuropäer, der Weltmeister wurde. In diesem Jahr wurden noch weitere Bestmarken in Bezug auf die 47-jährige "Crucible-Ära" aufgestellt. Unter anderem übertraf Ronnie O'Sullivan mit seiner 31. Endrundenteilnahme die 30 Teilnahmen von Steve Davis.[2] O'Sullivan erzielte auch sein 200. WM-Century-Break. Zweimal wurde ein Maximum Break erzielt, was es 2008 bereits einmal gegeben hatte; das "perfekte Break" in einem WM-Finale gelang 2023 erstmals Mark Selby.

Response: Question: Gegen wen verlor Ronnie O'Sullivan im Viertelfinale der Snooker-Weltmeisterschaft 2023? Answer: Luca Brecel

Paragraph: Die Zugspitze ist mit 2962 m der höchste Berg Deutschlands.

Response:"""  # noqa: E501

EXPECTED_TRANSLATION_HE_JA = (
    "Translate the provided text from Hebrew to Japanese while maintaining the original meaning and intent. "
    "Ensure accuracy and preserve the entities and concepts expressed in the source text.\n\n"
    "Input in Hebrew: מי ייסד את העיר?\nResponse in Japanese:"
)


def test_the_prompts_render_the_papers_words():
    assert generation_prompt("de", "Die Zugspitze ist mit 2962 m der höchste Berg Deutschlands.") == \
        EXPECTED_GENERATION_DE
    assert translation_prompt("he", "ja", "מי ייסד את העיר?") == EXPECTED_TRANSLATION_HE_JA
    with pytest.raises(CrossknowError, match="no language name for 'sw'"):
        generation_prompt("sw", "text")


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.skipif(not PAPER.exists(), reason="needs ../shared/papers/eclektic.md")
def test_the_templates_hold_the_same_words_as_the_paper_file():
    """Independent of the literals above: A.1 as the paper file prints it, markdown escapes undone;
    only the line breaks may differ (the extraction lost them)."""
    text = PAPER.read_text(encoding="utf-8")
    generation = text.split("#### **Question and Answer Generation**")[1].split("## Translation")[0]
    translation = text.split("## Translation")[1].split("## A.2")[0]

    def unescape(part: str) -> str:
        return _words(part.replace("\\*", "*").replace("\\_", "_"))

    assert _words(GENERATION_TEMPLATE) == unescape(generation)
    assert _words(TRANSLATION_TEMPLATE) == unescape(translation)


# ---- the strict parsers ------------------------------------------------------------------------------

QA_OUTPUTS = [
    # the paper's own example response
    ("Question: Where is the Great Barrier Reef located? Answer: Coral Sea, off the coast of Queensland, Australia",
     GeneratedQA("Where is the Great Barrier Reef located?", "Coral Sea, off the coast of Queensland, Australia")),
    # the answer on its own line, the prompt's last word echoed, markers in bold: all the same output
    ("Response: Question: Wer gewann? \nAnswer: Luca Brecel\n", GeneratedQA("Wer gewann?", "Luca Brecel")),
    ("**Question:** Wer gewann?\n**Answer:** Luca Brecel", GeneratedQA("Wer gewann?", "Luca Brecel")),
    ("question: 東京タワーの高さは何メートルですか？ answer: 333メートル",
     GeneratedQA("東京タワーの高さは何メートルですか？", "333メートル")),
    ("", None),  # empty
    ("Sure! Question: a? Answer: b", None),  # chatter before the question
    ("Question: a? Answer: b\n\nParagraph: more text\n\nResponse: Question: c? Answer: d", None),  # went on
    ("Question: a? Answer: b\nParagraph: x", None),  # the answer runs on over a second line
    ("Answer: b Question: a?", None),  # wrong order
    ("Question: a?", None),  # no answer marker
    ("Question:  Answer: b", None),  # empty question
    ("Question: a? Answer:   ", None),  # empty answer
    ("The question is about the reef.", None),  # no marker at all
]


@pytest.mark.parametrize(("text", "expected"), QA_OUTPUTS)
def test_the_question_answer_parser_is_strict(text, expected):
    value, error = parse_question_answer(text)
    assert value == expected
    assert (error is None) == (expected is not None)


_BURG = "Die Burg liegt über dem Tal. Die Burg wurde 1200 erbaut. Sie gehörte den Grafen von Tal."


@pytest.mark.parametrize(("text", "valid"), [
    ("Question: Wann wurde die Burg erbaut? Answer: 1200", True),
    ("Question: Die Burg wurde 1200 erbaut. Answer: 1200", False),  # the question copies the paragraph
    ("Question: Wem gehörte die Burg über dem Tal? Answer: die Burg", False),  # the question says the answer
    ("Question: Wann wurde die Burg erbaut? Answer: a banana", False),  # grounded in nothing
    ("Question: Wem gehörte die Burg? Answer: den Grafen von Tal", True),
])
def test_the_chat_parser_checks_what_the_paper_asks_of_a_question(text, valid):
    value, error = question_answer_parser(_BURG)(text)
    assert (value is not None, error is None) == (valid, valid), error


def test_the_translation_parser():
    parse = translation_parser("ja")
    assert parse("  東京は首都です。\n") == ("東京は首都です。", None)
    assert parse("Response in Japanese: 東京は首都です。") == ("東京は首都です。", None)  # the echo is dropped
    assert parse("line one\nline two") == ("line one\nline two", None)  # a context keeps its lines
    for bad in ("", "  \n ", "Response in Japanese:", "東京は首都です。\nInput in Japanese: 大阪",
                "Translate the provided text from English to Japanese while maintaining"):  # the prompt echoed
        value, error = parse(bad)
        assert value is None and error


# ---- the collection and its filters ------------------------------------------------------------------

LONG_EN = " ".join(f"Sentence number {i} of the article tells one more fact." for i in range(1, 13))  # 12 sentences
LONG_JA = "".join(f"これは記事の{i}番目の文で、事実を一つ述べている。" for i in range(1, 13))
LONG_HE = " ".join(f"זהו המשפט מספר {i} של המאמר והוא מספר עובדה אחת." for i in range(1, 13))
FRAGMENTS = "ab. " * 60  # 240 characters, but every piece is shorter than a sentence


def _doc(id_: str, lang: str, text: str, **extra) -> dict:
    return {"id": id_, "lang": lang, "title": f"Title {id_}", "text": text, **extra}


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n"
                            for r in records), encoding="utf-8")
    return path


def collection() -> list[dict]:
    return [
        _doc("en1", "en", LONG_EN),                                   # kept candidate
        _doc("en2", "en", LONG_EN, other_langs={"ja": "ja9"}),        # exists in ja (its own link)
        _doc("en3", "en", LONG_EN, other_langs={"ar": "ar1"}),        # ar is outside the set: still single
        _doc("en4", "en", "Too short to keep."),                      # under 200 characters
        _doc("en5", "en", LONG_EN, other_langs={"ja": "ja1"}),        # exists in ja; and so ja1 exists in en
        _doc("en6", "en", LONG_EN, url="https://en.example/en6"),     # kept candidate
        _doc("ja1", "ja", LONG_JA),                                   # linked from en5: not single
        _doc("ja2", "ja", LONG_JA),                                   # kept
        _doc("he1", "he", LONG_HE),                                   # kept
        _doc("he2", "he", FRAGMENTS),                                 # long enough, but no sentence
        _doc("ar1", "ar", LONG_EN),                                   # a language outside the set
    ]


def test_the_filters_count_what_they_drop(tmp_path):
    documents = read_documents(write_jsonl(tmp_path / "docs.jsonl", collection()))
    selected, counts, outside = select_documents(documents, ["en", "ja", "he"], min_chars=200, per_language=2,
                                                 n_sentences=10, seed=7)
    by_hand = {
        # read, in another language of the set, too few views, views unknown (kept), too short, no sentence,
        # not sampled, kept
        "en": (6, 2, 0, 4, 1, 0, 1, 2),  # en2, en5 | - | en1, en3, en4, en6 | en4 | - | one of en1, en3, en6 | two
        "ja": (2, 1, 0, 1, 0, 0, 0, 1),  # ja1 (linked from en5) | - | ja2 | ja2
        "he": (2, 0, 0, 2, 0, 1, 0, 1),  # - | - | both | - | he2 has no sentence | he1
    }
    assert {lang: tuple(c.model_dump().values()) for lang, c in counts.items()} == by_hand
    assert outside == 1
    # the seeded sample: the eligible en documents shuffled by Random("7:en"), the first two taken
    eligible = ["en1", "en3", "en6"]
    random.Random("7:en").shuffle(eligible)
    chosen = [s.document.id for s in selected]
    assert chosen == [d for d in ("en1", "en3", "en6", "ja2", "he1") if d in set(eligible[:2]) | {"ja2", "he1"}]
    lines = {s.document.id: s.line for s in selected}
    assert all(lines[d] == 1 + [c["id"] for c in collection()].index(d) for d in chosen)
    # the main set's question is translated into every other language of the set
    assert {s.document.id: s.missing_in for s in selected if s.document.lang != "en"} == {
        "ja2": ("en", "he"), "he1": ("en", "ja")}
    # another seed may choose otherwise, the same seed always the same
    again, _, _ = select_documents(documents, ["en", "ja", "he"], min_chars=200, per_language=2, n_sentences=10,
                                   seed=7)
    assert [s.document.id for s in again] == chosen


def test_the_main_set_drops_articles_with_too_few_known_views(tmp_path):
    documents = read_documents(write_jsonl(tmp_path / "docs.jsonl", [
        _doc("en1", "en", LONG_EN, views=99), _doc("en2", "en", LONG_EN, views=100), _doc("en3", "en", LONG_EN),
        _doc("ja1", "ja", LONG_JA, views=0)]))
    selected, counts, _ = select_documents(documents, ["en", "ja"], min_chars=200, per_language=5, n_sentences=10,
                                           seed=0, min_views=100)
    assert [s.document.id for s in selected] == ["en2", "en3"]  # section 3.1: at least 100 views; en3's unknown
    assert (counts["en"].too_few_views, counts["en"].views_unknown, counts["ja"].too_few_views) == (1, 1, 1)


def popular_collection() -> list[dict]:
    return [
        _doc("p_en1", "en", LONG_EN, views=500, other_langs={"ja": "elsewhere"}),  # lacks he
        _doc("p_en2", "en", LONG_EN, views=900, other_langs={"ja": "p_ja1", "he": "p_he2"}),  # in every language
        _doc("p_en3", "en", LONG_EN, views=300),  # lacks ja and he
        _doc("p_en4", "en", "Too short to keep.", views=800),
        _doc("p_en5", "en", LONG_EN, views=300),  # as many views as p_en3, a later line
        _doc("p_ja1", "ja", LONG_JA, views=50, other_langs={"en": "somewhere"}),  # linked from p_en2 too; lacks he
        _doc("p_he1", "he", FRAGMENTS, views=10),  # lacks en and ja, but has no sentence
        _doc("p_he2", "he", LONG_HE, views=20),  # linked from p_en2: lacks ja
    ]


def test_popular_pages_are_the_most_viewed_lacking_one_language(tmp_path):
    documents = read_documents(write_jsonl(tmp_path / "docs.jsonl", popular_collection()))
    selected, counts, _ = select_documents(documents, ["en", "ja", "he"], min_chars=200, per_language=2,
                                           n_sentences=10, seed=0, selection="popular")
    # by hand: en ranks p_en2 out (in every language), p_en4 out (short), then p_en1 (500), p_en3 and p_en5
    # (300 each: p_en3 first, its line is earlier); he ranks p_he2 (20) before p_he1 (10, no sentence)
    assert [(s.document.id, s.missing_in) for s in selected] == [
        ("p_en1", ("he",)), ("p_en3", ("ja", "he")), ("p_ja1", ("he",)), ("p_he2", ("ja",))]
    # read, in every other language, too few views, views unknown, too short, no sentence, not sampled, kept
    by_hand = {
        "en": (5, 1, 0, 0, 1, 0, 1, 2), "ja": (1, 0, 0, 0, 0, 0, 0, 1), "he": (2, 0, 0, 0, 0, 1, 0, 1)}
    assert {lang: tuple(c.model_dump().values()) for lang, c in counts.items()} == by_hand
    # the main set's selection of the same collection: only articles in no other language of the set
    single, _, _ = select_documents(documents, ["en", "ja", "he"], min_chars=200, per_language=2, n_sentences=10,
                                    seed=0)
    assert {s.document.id for s in single} == {"p_en3", "p_en5"}


def test_popular_pages_need_views(tmp_path):
    records = popular_collection()
    del records[2]["views"]
    documents = read_documents(write_jsonl(tmp_path / "docs.jsonl", records))
    with pytest.raises(InputError) as caught:
        select_documents(documents, ["en", "ja", "he"], min_chars=200, per_language=2, n_sentences=10, seed=0,
                         selection="popular", path=tmp_path / "docs.jsonl")
    assert (caught.value.line, caught.value.field) == (3, "views") and "docs.jsonl" in str(caught.value)


def test_the_paper_takes_100_articles_per_language_for_the_main_set_and_200_for_popular_pages():
    assert BuildConfig(model="writer", documents="d.jsonl").per_language == 100
    assert BuildConfig(model="writer", documents="d.jsonl", selection="popular").per_language == 200
    assert BuildConfig(model="writer", documents="d.jsonl", selection="popular", per_language=3).per_language == 3


def test_the_context_is_the_first_ten_sentences(tmp_path):
    [(_, english)] = read_documents(write_jsonl(tmp_path / "d.jsonl", [_doc("en1", "en", LONG_EN)]))
    expected = " ".join(f"Sentence number {i} of the article tells one more fact." for i in range(1, 11))
    assert context_of(english, 10) == expected
    [(_, japanese)] = read_documents(write_jsonl(tmp_path / "j.jsonl", [_doc("ja1", "ja", LONG_JA)]))
    # no space between sentences in Japanese
    assert context_of(japanese, 2) == ("これは記事の1番目の文で、事実を一つ述べている。"
                                       "これは記事の2番目の文で、事実を一つ述べている。")


@pytest.mark.parametrize(("record", "line", "field"), [
    ({"id": "x", "lang": "en", "text": LONG_EN}, 2, "title"),
    (_doc("x", "en", LONG_EN, other_langs={"ja": 5}), 2, "other_langs.ja"),
    (_doc("x", "english", LONG_EN), 2, "lang"),
    (_doc("x", "en", "   "), 2, "text"),
    (_doc("x", "en", LONG_EN, other_langs={"en": "y"}), 2, "other_langs.en"),
    (_doc("en1", "en", LONG_EN), 2, "id"),  # a repeated id
    (_doc("x", "en", LONG_EN, pageviews=3), 2, "pageviews"),  # an unknown field
    (_doc("x", "en", LONG_EN, views=-1), 2, "views"),
])
def test_a_bad_record_names_file_line_and_field(tmp_path, record, line, field):
    path = write_jsonl(tmp_path / "docs.jsonl", [_doc("en1", "en", LONG_EN), record])
    with pytest.raises(InputError) as error:
        read_documents(path)
    assert (error.value.path, error.value.line, error.value.field) == (str(path), line, field)


def test_a_line_that_is_not_json_is_named(tmp_path):
    path = write_jsonl(tmp_path / "docs.jsonl", [_doc("en1", "en", LONG_EN), "{not json"])
    with pytest.raises(InputError, match="line 2"):
        read_documents(path)


# ---- the pivot check -----------------------------------------------------------------------------------


def test_chrf_by_hand_and_against_sacrebleu():
    # "ab" vs "abc": unigrams P = 2/2, R = 2/3; bigrams P = 1/1, R = 1/2; no trigram in "ab".
    # mean P = 1, mean R = 7/12; F2 = 5 * 1 * 7/12 / (4 * 1 + 7/12) = 35/55
    assert chrf("ab", "abc") == pytest.approx(35 / 55)
    assert chrf("a b", "ab") == 1.0  # whitespace is not counted
    assert chrf("", "abc") == 0.0 and chrf("xyz", "abc") == 0.0
    sacrebleu = pytest.importorskip("sacrebleu.metrics")
    reference = sacrebleu.CHRF()
    for hypothesis, expected in [("The cat sat on the mat.", "A cat was sitting on the mat."),
                                 ("東京は日本の首都です", "日本の首都は東京"),
                                 ("Luca Brecel", "Brecel")]:
        assert chrf(hypothesis, expected) == pytest.approx(reference.sentence_score(hypothesis, [expected]).score / 100)


def test_the_pivot_check_flags_a_low_or_missing_score():
    reference = Texts(question="Who won?", answer="Luca Brecel", context="Luca Brecel won.")
    same = pivot_check("en", reference, reference, threshold=0.45)
    assert same.scores == {"question": 1.0, "answer": 1.0, "context": 1.0} and not same.flagged
    off = pivot_check("en", Texts(question="Who won?", answer="Mark Selby", context="Luca Brecel won."), reference,
                      threshold=0.45)
    assert off.scores["answer"] < 0.45 and off.flagged
    missing = pivot_check("en", Texts(question=None, answer="Luca Brecel", context="Luca Brecel won."), reference,
                          threshold=0.45)
    assert missing.scores["question"] is None and missing.flagged


# ---- the build, with a scripted generator ----------------------------------------------------------------

_TRANSLATE = re.compile(r"^Translate the provided text from (\w+) to (\w+) .*?\n\nInput in \1: (.*)\nResponse in \2:$",
                        re.S)


def scripted_reply(user: str, seed: int) -> str | None:
    """Generation: a question and answer naming the paragraph's first word, except that the he document
    answers junk on every attempt. Translation: the text unchanged (a back-translation then matches its
    reference exactly), except into Hebrew, where the answer comes out as something else and the
    question as nothing at all, on every attempt."""
    if user.startswith("**Task:** Formulate"):
        paragraph = user.rsplit("Paragraph: ", 1)[1].removesuffix("\n\nResponse:")
        if paragraph.startswith("זהו"):
            return "I cannot write a question."
        return f"Question: What is said of {paragraph.split()[0][:12]}? Answer: {paragraph[:20]}"
    in_lang, out_lang, text = _TRANSLATE.match(user).groups()
    if out_lang == "Hebrew" and text.startswith("What is said"):
        return ""
    if out_lang == "Hebrew" and len(text) == 20:
        return "תשובה אחרת לגמרי"
    return text


def build_with(config: BuildConfig, generator, cache: Path, out: Path, prices: PriceTable | None = None,
               on_progress=None):
    """`build_set` with `generator` adopted by a ClientPool over the request cache at `cache`, as the writer."""
    pool = ClientPool(cache_path=cache, prices=prices)
    pool.adopt("writer", generator)
    try:
        return build_set(config, lambda: pool.client("writer", build_role(config)), out, on_progress=on_progress)
    finally:
        pool.close()


def scripted_build(tmp_path: Path, out: str = "build", **overrides):
    docs = write_jsonl(tmp_path / "docs.jsonl", collection())
    config = BuildConfig(model="writer", documents=str(docs), languages=["en", "ja", "he"], per_language=1, seed=7,
                         max_attempts=2, batch_size=4, **overrides)
    generator = Scripted(scripted_reply)
    prices = PriceTable({"m": ModelPrice(prompt=1.0, completion=10.0)})
    seen: list[str] = []
    result = build_with(config, generator, tmp_path / "cache.sqlite", tmp_path / out, prices=prices,
                        on_progress=lambda step, done, total, meter: seen.append(step))
    return result, generator, seen


def test_a_scripted_build_records_invalid_outputs_flags_rows_and_replays_from_the_cache(tmp_path):
    result, generator, steps = scripted_build(tmp_path)
    summary = result.summary
    # one document per language: en (one of en1/en3/en6), ja2, he1; he1's generation is invalid twice
    assert [q.original_lang for q in result.questions] == ["en", "ja"] and summary.questions == 2
    # requests, by hand: 3 generations + 1 retry (he1); forward: 2 questions x 2 targets x 3 fields = 12,
    # + 2 retries of the empty Hebrew questions; back: 12 - 2 (no Hebrew question to translate back) = 10.
    # Both Hebrew answers are the same text, so their back-translations are one request: the second,
    # in a later batch of 4, comes from the cache.
    assert (summary.calls, summary.cached_calls) == (4 + 14 + 10 - 1, 1)
    assert len(generator.requests) == summary.calls
    call = (20 * 1.0 + 2 * 10.0) / 1e6
    assert summary.cost_usd_this_run == pytest.approx(27 * call)
    assert summary.cost_usd_total == pytest.approx(28 * call)  # what the outputs cost, the cached one too
    assert summary.invalid == {"generate": 1, "translate": 2, "back-translate": 0}
    by_field = {r.field: r for r in result.invalid}
    assert set(by_field) == {"generate", "translate.he.question"} and len(result.invalid) == 3
    he = by_field["generate"]
    assert (he.item_id, he.line, he.path) == ("he1", 9, str(tmp_path / "docs.jsonl"))
    assert "after 2 attempt(s)" in he.reason and "I cannot write a question." in he.reason
    assert steps[0] == "generate" and "translate -> ja" in steps and "back-translate -> en" in steps

    english, japanese = result.questions
    assert english.english is None and japanese.english == japanese.translations["en"].texts
    # into ja: perfect; into en from ja: checked back in Japanese against the source; into he: flagged
    assert english.translations["ja"].pivot.scores == {"question": 1.0, "answer": 1.0, "context": 1.0}
    assert japanese.translations["en"].pivot.pivot_lang == "ja" and not japanese.translations["en"].pivot.flagged
    hebrew = english.translations["he"]
    assert hebrew.texts.question is None and hebrew.texts.answer == "תשובה אחרת לגמרי"
    assert hebrew.pivot.scores["question"] is None and hebrew.pivot.scores["answer"] == 0.0 and hebrew.pivot.flagged
    assert summary.flagged_rows == 2  # the he rows of both questions
    assert summary.filters["he"].kept == 1 and summary.selection == "single_language"

    files = {p.name for p in result.out.iterdir()}
    assert {"questions.jsonl", "review.csv", "invalid.jsonl", "build.json", "config.yaml", "inputs.json"} <= files
    assert len((result.out / "questions.jsonl").read_text(encoding="utf-8").splitlines()) == 2

    # the same build again pays nothing and writes the same files
    before = {name: (result.out / name).read_bytes() for name in ("questions.jsonl", "review.csv")}
    again, replay, _ = scripted_build(tmp_path)
    assert replay.requests == [] and again.summary.calls == 0 and again.summary.cached_calls == 4 + 14 + 10
    assert again.summary.cost_usd_this_run == 0.0 and again.summary.cost_usd_total == summary.cost_usd_total
    assert {name: (result.out / name).read_bytes() for name in before} == before


def test_a_popular_pages_build_translates_only_into_the_languages_that_lack_the_article(tmp_path):
    docs = write_jsonl(tmp_path / "docs.jsonl", popular_collection())
    config = BuildConfig(model="writer", documents=str(docs), languages=["en", "ja", "he"], selection="popular",
                         per_language=1, max_attempts=1, batch_size=4)
    result = build_with(config, Scripted(scripted_reply), tmp_path / "cache.sqlite", tmp_path / "b")
    # p_en1 (most viewed of en lacking a language) lacks he; p_ja1 lacks he; p_he2's generation is invalid
    assert {q.q_id: sorted(q.translations) for q in result.questions} == {"p_en1": ["he"], "p_ja1": ["he"]}
    japanese = next(q for q in result.questions if q.q_id == "p_ja1")
    assert japanese.english is not None  # the English pivot is made although the set's en has the article
    assert result.summary.selection == "popular"
    rows = read_sheet(result.out / "review.csv")
    assert [(r["q_id"], r["lang"]) for r in rows] == [("p_en1", "en"), ("p_en1", "he"), ("p_ja1", "ja"),
                                                      ("p_ja1", "he")]
    for row in rows:
        row["approved"] = "yes"
        if row["lang"] == row["original_lang"]:
            row.update(closed_book="yes", language_specific="yes", self_contained="yes")
        if not row["question"]:
            row["fixed_question"] = "מה נאמר במאמר?"
    released = tmp_path / "popular.jsonl"
    import_sheet(write_sheet(tmp_path / "reviewed.csv", rows), released)
    # section 5: each question is evaluated only in the languages whose Wikipedia lacks its article
    assert load_eclektic_set(released, variant="popular").targets == {"p_en1": ("en", "he"), "p_ja1": ("ja", "he")}


def test_a_build_keeps_an_edited_sheet_and_refuses_another_config(tmp_path):
    result, _, _ = scripted_build(tmp_path)
    sheet = result.out / "review.csv"
    sheet.write_text(sheet.read_text(encoding="utf-8-sig").replace("Title", "Titel", 1), encoding="utf-8")
    edited = sheet.read_bytes()
    with pytest.raises(CrossknowError, match="review.csv differs"):
        scripted_build(tmp_path)
    assert sheet.read_bytes() == edited
    with pytest.raises(CrossknowError, match="another config"):
        scripted_build(tmp_path, pivot_threshold=0.9)


def test_the_config_refuses_languages_outside_the_format():
    with pytest.raises(ValueError, match="columns for"):
        BuildConfig(model="writer", documents="d.jsonl", languages=["en", "sw"])
    with pytest.raises(ValueError, match="at least two"):
        BuildConfig(model="writer", documents="d.jsonl", languages=["en"])


# ---- the review sheet ------------------------------------------------------------------------------------


def read_sheet(path: Path) -> list[dict]:
    with open(path, encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def write_sheet(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_the_sheet_round_trips_into_the_released_format(tmp_path):
    result, _, _ = scripted_build(tmp_path)
    english, japanese = result.questions
    rows = read_sheet(result.out / "review.csv")
    assert list(rows[0]) == list(SHEET_COLUMNS)
    assert [(r["q_id"], r["lang"]) for r in rows] == [(english.q_id, "en"), (english.q_id, "he"),
                                                      (english.q_id, "ja"), ("ja2", "ja"), ("ja2", "en"),
                                                      ("ja2", "he")]  # source row first, then column order
    assert all(r["approved"] == r["fixed_question"] == r["fixed_answer"] == "" for r in rows)
    he_row = rows[1]
    assert he_row["flagged"] == "yes" and "no valid translation of the question" in he_row["problems"]
    assert rows[2]["chrf_question"] == "1.0000" and rows[0]["pivot_lang"] == "" and rows[4]["pivot_lang"] == "ja"

    # the review: the en question's he question written by the reviewer (the model gave none), its ja
    # question fixed; the ja question's he translation rejected, which discards the whole question
    assert [r["closed_book"] == r["language_specific"] == r["self_contained"] == "" for r in rows] == [True] * 6
    for row in rows:
        row["approved"] = "yes"
        if row["lang"] == row["original_lang"]:
            row.update(closed_book="yes", language_specific="yes", self_contained="yes")
    rows[1]["fixed_question"] = "מה נאמר במאמר?"
    rows[2]["fixed_question"] = "修正された質問ですか？"
    rows[5]["approved"] = "No"
    released = tmp_path / "released.jsonl"
    summary = import_sheet(write_sheet(tmp_path / "reviewed.csv", rows), released)
    assert (summary.questions, summary.rows, summary.dropped) == (1, 3, {"ja2": "its he translation was rejected"})

    [record] = [json.loads(line) for line in released.read_text(encoding="utf-8").splitlines()]
    assert record["q_id"] == english.q_id and record["original_lang"] == "en" and "ja2" not in released.read_text()
    assert (record["content"], record["question"]) == (english.source.context, english.source.question)
    items = read_eclektic(released).items
    assert {(item.lang, item.question, item.answer) for item in items} == {
        ("en", english.source.question, english.source.answer),
        ("he", "מה נאמר במאמר?", english.translations["he"].texts.answer),
        ("ja", "修正された質問ですか？", english.translations["ja"].texts.answer),
    }
    assert {item.pair_id for item in items} == {english.q_id}
    assert all(item.source_lang == "en" and item.metadata["title"] == english.title for item in items)
    ja_item = next(item for item in items if item.lang == "ja")
    assert ja_item.context == english.translations["ja"].texts.context
    built = load_eclektic_set(released, variant="popular")
    assert set(built.targets[english.q_id]) == {"en", "he", "ja"} and built.invalid == []


def test_a_criterion_answered_no_discards_the_question_and_its_rows_need_no_review(tmp_path):
    rows = _reviewed(tmp_path)
    rows[3]["language_specific"] = "no"  # the ja2 question asks general knowledge
    rows[4]["approved"] = rows[5]["approved"] = ""  # so its translations were never reviewed
    summary = import_sheet(write_sheet(tmp_path / "reviewed.csv", rows), tmp_path / "released.jsonl")
    assert summary.questions == 1 and summary.dropped == {"ja2": "it fails the criterion language_specific"}


def _reviewed(tmp_path: Path) -> list[dict]:
    result, _, _ = scripted_build(tmp_path)
    rows = read_sheet(result.out / "review.csv")
    for row in rows:
        row["approved"] = "yes"
        if row["lang"] == row["original_lang"]:
            row.update(closed_book="yes", language_specific="yes", self_contained="yes")
        if not row["question"]:  # the Hebrew rows: the reviewer writes the question the model did not
            row["fixed_question"] = "מה נאמר במאמר?"
    import_sheet(write_sheet(tmp_path / "complete.csv", rows), tmp_path / "complete.jsonl")  # a valid review
    return rows


@pytest.mark.parametrize(("change", "line", "field"), [
    (lambda rows: rows[2].update(approved=""), 4, "approved"),  # not reviewed
    (lambda rows: rows[2].update(approved="maybe"), 4, "approved"),
    (lambda rows: rows[1].update(fixed_question=""), 3, "question"),  # approved he row with no question
    (lambda rows: rows[4].update(lang="sw"), 6, "lang"),
    (lambda rows: rows[5].update(lang="en"), 7, "lang"),  # a second en row for ja2
    (lambda rows: rows[2].update(title="Another title"), 4, "title"),
    (lambda rows: [row.pop("approved") for row in rows], 1, "approved"),  # the column is missing
    (lambda rows: rows[0].update(self_contained=""), 2, "self_contained"),  # an approved source row's criterion
    (lambda rows: rows[3].update(closed_book="perhaps"), 5, "closed_book"),
    # a cell over two lines before it: the record's first line is still named
    (lambda rows: [rows[1].update(fixed_question="two\nlines"), rows[2].update(approved="")], 5, "approved"),
])
def test_a_bad_sheet_names_line_and_column(tmp_path, change, line, field):
    rows = _reviewed(tmp_path)
    change(rows)
    path = write_sheet(tmp_path / "reviewed.csv", rows)
    with pytest.raises(InputError) as error:
        import_sheet(path, tmp_path / "released.jsonl")
    assert (error.value.path, error.value.line, error.value.field) == (str(path), line, field)
    assert not (tmp_path / "released.jsonl").exists()  # nothing half-done


def test_a_source_row_whose_question_is_missing_is_an_error(tmp_path):
    rows = [row for row in _reviewed(tmp_path) if (row["q_id"], row["lang"]) != ("ja2", "ja")]
    path = write_sheet(tmp_path / "reviewed.csv", rows)
    with pytest.raises(InputError, match="no row in its source language") as error:
        import_sheet(path, tmp_path / "released.jsonl")
    assert (error.value.line, error.value.field) == (5, "lang")


def test_a_q_id_that_read_eclektic_refuses_is_refused_before_writing(tmp_path):
    rows = _reviewed(tmp_path)
    long_id = "q" * 300  # its items' ids "q...q:ja" are longer than an item id may be
    for row in rows:
        if row["q_id"] == rows[-1]["q_id"]:
            row["q_id"] = long_id
    path = write_sheet(tmp_path / "reviewed.csv", rows)
    with pytest.raises(InputError, match="at most 256 characters") as error:
        import_sheet(path, tmp_path / "released.jsonl")
    assert (error.value.path, error.value.field) == (str(path), "q_id")
    assert error.value.line == next(n for n, row in enumerate(rows, start=2)
                                    if row["q_id"] == long_id and row["lang"] == row["original_lang"])
    assert not (tmp_path / "released.jsonl").exists()


# ---- one real build against the llama.cpp chat server ------------------------------------------------------


class FirstQuestionScripted:
    """The real server for every request but the generation from the Forth Bridge article, which is answered as
    a capable model would, from the article's first two sentences (the build's context): Gemma 3 270M, a base
    model, only repeats the generation prompt, so without it no translation would ever reach the server."""

    def __init__(self, real):
        self.real, self.name, self.model_id = real, real.name, real.model_id
        self.sent = self.scripted = 0
        """Requests that reached the real server, and those answered here."""

    def generate(self, requests):
        from crossknow.models.generator import GenerateResult

        def scripted(request) -> bool:
            user = request.messages[-1].content
            return user.startswith("**Task:** Formulate") and "Paragraph: The Forth Bridge" in user

        real = [r for r in requests if not scripted(r)]
        answers = iter(self.real.generate(real) if real else [])
        self.sent += len(real)
        self.scripted += len(requests) - len(real)
        return [GenerateResult("Question: When was the Forth Bridge opened? Answer: 1890",
                               self.name, self.model_id) if scripted(r) else next(answers) for r in requests]


@pytest.mark.nightly
def test_a_real_build_against_the_llama_server(llama_chat_server, tmp_path):
    """Gemma 3 270M may write anything: the test asserts the build's structure, that every invalid
    output is recorded after its attempts, and that a second build sends no request."""
    from crossknow.models.openai_generator import OpenAIGenerator

    docs = write_jsonl(tmp_path / "docs.jsonl", [
        _doc("en1", "en", "The Forth Bridge is a railway bridge in Scotland. It was opened in 1890. "
                          "John Fowler and Benjamin Baker designed it. It spans the Firth of Forth west of Edinburgh. "
                          "It was the longest cantilever span in the world until 1917."),
        _doc("ja1", "ja", "清水寺は京都市東山区にある寺院である。本堂は1633年に再建された。"
                          "本堂の舞台は高さ約13メートルで、京都の町を見渡すことができる。多くの観光客が訪れる。"
                          "寺の名前は境内に湧く清水に由来する。" * 3),
    ])
    assert all(len(d.text) >= 200 for _, d in read_documents(docs))  # both pass the paper's length filter
    config = BuildConfig(model="writer", documents=str(docs), languages=["en", "ja"], per_language=1, n_sentences=2,
                         max_attempts=2, max_tokens=32)
    generator = FirstQuestionScripted(OpenAIGenerator("gemma-3-270m", llama_chat_server, concurrency=2))
    result = build_with(config, generator, tmp_path / "cache.sqlite", tmp_path / "build")
    summary = result.summary
    print(summary.model_dump_json(indent=1), *result.invalid, sep="\n")
    assert [c.kept for c in summary.filters.values()] == [1, 1] and generator.sent > 0
    for record in result.invalid:  # every invalid output: named, with its document's line and attempts
        assert (record.item_id, record.line) in {("en1", 1), ("ja1", 2)} and "after 2 attempt(s)" in record.reason
    # ja1's question comes from the real model: a question, or a generation recorded invalid
    assert summary.questions == 2 - summary.invalid["generate"]
    assert ("ja1" in {q.q_id for q in result.questions}) != ("generate" in {r.field for r in result.invalid})
    english = next(q for q in result.questions if q.q_id == "en1")
    assert english.source.answer == "1890" and set(english.translations) == {"ja"}
    into_ja = english.translations["ja"]
    for field in ("question", "answer", "context"):  # a translation by the real model, or recorded invalid
        text = getattr(into_ja.texts, field)
        assert (text is None) == (f"translate.ja.{field}" in {r.field for r in result.invalid})
        assert text is None or text.strip() == text != ""
        score = into_ja.pivot.scores[field]
        assert (score is None) == (text is None or getattr(into_ja.pivot.back, field) is None)
        assert score is None or 0.0 <= score <= 1.0
    assert into_ja.pivot.pivot_lang == "en"
    rows = read_sheet(result.out / "review.csv")
    assert len(rows) == sum(1 + len(q.translations) for q in result.questions)
    assert summary.calls == generator.sent + generator.scripted
    assert summary.cost_usd_this_run == 0.0  # a local model has no price

    sent = generator.sent
    again = build_with(config, generator, tmp_path / "cache.sqlite", tmp_path / "build")
    assert generator.sent == sent and again.summary.calls == 0
    assert again.summary.cached_calls == summary.calls + summary.cached_calls
    assert [q.model_dump() for q in again.questions] == [q.model_dump() for q in result.questions]
