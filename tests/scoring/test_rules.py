"""The scoring rules build the requests that the paper (Appendix A) and lm-eval define."""

from __future__ import annotations

import pytest

from crossknow.data.schemas import MCItem
from crossknow.errors import CrossknowError
from crossknow.scoring.rules import check_boundary, option_requests


def pairs(item, rule):
    return [(o.request.context, o.request.continuation, o.norm_text) for o in option_requests(item, rule)]


def test_adaxeval_cloze_scores_the_option_and_the_rest_of_the_sentence():
    # The paper's own example: "[BLANK] can be used to control blood sugar level"
    item = MCItem(id="1", lang="en", kind="cloze", prompt="[BLANK] can be used to control blood sugar level",
                  options=["insulin", "aspirin"], answer=0)
    assert pairs(item, "adaxeval") == [
        ("", "insulin can be used to control blood sugar level", "insulin can be used to control blood sugar level"),
        ("", "aspirin can be used to control blood sugar level", "aspirin can be used to control blood sugar level"),
    ]


def test_adaxeval_question_keeps_the_newline_in_the_context_and_scores_only_the_option():
    item = MCItem(id="1", lang="en", kind="question", prompt="Which substance helps manage glycemic levels?",
                  options=["insulin", "aspirin"], answer=0)
    assert pairs(item, "adaxeval")[0] == ("Which substance helps manage glycemic levels?\n", "insulin", "insulin")


def test_lm_eval_question_uses_a_space_delimiter_and_counts_the_choice_alone():
    item = MCItem(id="1", lang="en", kind="question", prompt="What is 2+2?", options=["4", "5"], answer=0)
    assert pairs(item, "lm-eval") == [("Question: What is 2+2?\nAnswer:", " 4", "4"),
                                      ("Question: What is 2+2?\nAnswer:", " 5", "5")]


def test_lm_eval_cloze_moves_the_whitespace_before_the_blank_and_japanese_has_none():
    english = MCItem(id="1", lang="en", kind="cloze", prompt="The capital is [BLANK].", options=["Paris", "Rome"],
                     answer=0)
    japanese = MCItem(id="2", lang="ja", kind="cloze", prompt="日本の首都は[BLANK]です。", options=["東京", "大阪"],
                      answer=0)
    assert pairs(english, "lm-eval")[0] == ("The capital is", " Paris.", "Paris.")
    assert pairs(japanese, "lm-eval")[0] == ("日本の首都は", "東京です。", "東京です。")


def test_the_literal_boundary_goes_with_the_adaxeval_rule_only():
    cloze = MCItem(id="1", lang="en", kind="cloze", prompt="The capital is [BLANK].", options=["Paris", "Rome"],
                   answer=0)
    literal = option_requests(cloze, "adaxeval", "literal")
    assert [(o.request.context, o.request.continuation, o.request.boundary) for o in literal] == [
        ("The capital is ", "Paris.", "literal"), ("The capital is ", "Rome.", "literal")]
    assert {o.request.boundary for o in option_requests(cloze, "adaxeval")} == {"moved"}  # the default
    with pytest.raises(CrossknowError, match="adaxeval rule only; this run's rule is lm-eval"):
        option_requests(cloze, "lm-eval", "literal")
    with pytest.raises(CrossknowError, match="unknown boundary 'shifted'"):
        check_boundary("adaxeval", "shifted")
