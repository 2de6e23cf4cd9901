"""The answering prompts of Appendix A.3 and the judge prompt of A.2, rendered for one sample question.

The expected strings are written out here from the paper (../shared/papers/eclektic.md, Appendix A),
not from the module: the words are the paper's; the line breaks are those the module documents
(a blank line where the paper shows one; the judge prompt's list items and field values each on a
line of their own).
"""

from __future__ import annotations

import pytest

from crossknow.data.eclektic import LANGUAGES
from crossknow.eclektic.examples import Question
from crossknow.eclektic.prompts import SETTINGS, answer_prompt, judge_prompt, language_name
from crossknow.errors import CrossknowError

KIYOMIZU = Question(
    q_id="7",
    lang="de",
    source_lang="ja",
    question="In welchem Jahr wurde die Haupthalle des Tempels neu errichtet?",
    answer="1633",
    context="Die Haupthalle des Kiyomizu-dera wurde 1633 neu errichtet.",
    title="清水寺",
    source_context="清水寺の本堂は1633年に再建された。",
)
Q = "In welchem Jahr wurde die Haupthalle des Tempels neu errichtet?"


def test_the_five_settings_render_the_papers_text():
    expected = {
        "closed-book": Q,
        "general-hint": "Answer the following question based on your knowledge in another language.\n\n" + Q,
        "source-language-name": "Answer the following question based on your knowledge in Japanese.\n\n" + Q,
        "source-language-title": (
            "Answer the following question based on your knowledge in Japanese about 清水寺.\n\n" + Q
        ),
        "cross-lingual-open-book": "Context: 清水寺の本堂は1633年に再建された。\n" + Q,
    }
    assert SETTINGS == tuple(expected)  # Table 3's order
    for setting, text in expected.items():
        assert answer_prompt(setting, KIYOMIZU) == text, setting


def test_the_judge_prompt_renders_the_papers_text_in_the_target_language():
    rendered = judge_prompt("de", KIYOMIZU.context, KIYOMIZU.question, "Im Jahr 1633.")
    assert rendered == (
        "**Task:** Determine if an answer to the question is supported by a given text.\n"
        "\n"
        "**Input (in German):**\n"
        "- Text\n"
        "- Question\n"
        "- Answer\n"
        "\n"
        "**Single Word Output (in English):**\n"
        "- YES: Answer is derived from the text.\n"
        "- NO: Answer is not derived from the text.\n"
        "\n"
        "Text:\n"
        "Die Haupthalle des Kiyomizu-dera wurde 1633 neu errichtet.\n"
        "\n"
        "Question:\n"
        "In welchem Jahr wurde die Haupthalle des Tempels neu errichtet?\n"
        "\n"
        "Answer:\n"
        "Im Jahr 1633.\n"
        "\n"
        "Output:"
    )


def test_braces_in_a_question_are_text_not_placeholders():
    odd = Question("1", "en", "en", "What does {x} mean in {lang}?", "a", "{c}", None, None)
    assert answer_prompt("closed-book", odd) == "What does {x} mean in {lang}?"
    assert judge_prompt("en", "{c}", odd.question, "{y}").endswith("Text:\n{c}\n\nQuestion:\n"
                                                                   "What does {x} mean in {lang}?\n\n"
                                                                   "Answer:\n{y}\n\nOutput:")


def test_language_names_cover_eclektic_and_fail_loudly_elsewhere():
    assert [language_name(code) for code in LANGUAGES]  # every ECLEKTIC language is named
    assert [language_name(code) for code in ("he", "hi", "id", "ko", "zh")] == [
        "Hebrew", "Hindi", "Indonesian", "Korean", "Chinese"
    ]
    with pytest.raises(CrossknowError, match="no language name for 'vi'"):
        language_name("vi")
    with pytest.raises(CrossknowError, match="no language name for 'vi'"):
        judge_prompt("vi", "c", "q", "a")
    with pytest.raises(CrossknowError, match="no language name for 'sw' in ECLEKTIC"):
        language_name("sw")  # named in crossknow's table, but no language of ECLEKTIC


def test_a_setting_that_needs_a_missing_field_or_an_unknown_setting_is_an_error():
    bare = Question("3", "en", "de", "Who?", "Her", "ctx", None, None)
    assert answer_prompt("source-language-name", bare).startswith("Answer the following question based on your "
                                                                  "knowledge in German.")
    with pytest.raises(CrossknowError, match=r"question 3 \(en\) has no title"):
        answer_prompt("source-language-title", bare)
    with pytest.raises(CrossknowError, match=r"question 3 \(en\) has no source_context"):
        answer_prompt("cross-lingual-open-book", bare)
    with pytest.raises(CrossknowError, match="unknown answering setting 'open-book'"):
        answer_prompt("open-book", bare)
