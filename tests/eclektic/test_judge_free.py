"""Judge-free judgements: answer recall on hand-computed cases (Japanese and Korean included), and the
gold answer's loss through the embedded model checked against a plain forward pass."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from crossknow.eclektic.answer import ANSWER_SCHEMA, AnswerRow
from crossknow.eclektic.examples import EclekticSet, Question
from crossknow.eclektic.judge import JUDGEMENT_SCHEMA
from crossknow.eclektic.judge_free import answer_recall, judge_by_gold_loss, judge_by_recall, recall_words
from crossknow.errors import CrossknowError

from .scripted import two_question_set


def test_recall_words_normalise_and_split_cjk_characters():
    assert recall_words("The Eiffel Tower!") == ["the", "eiffel", "tower"]
    assert recall_words("ＰＡＲＩＳ，France") == ["paris", "france"]  # NFKC folds full-width letters and comma
    assert recall_words("Straße") == ["strasse"]  # casefold
    assert recall_words("東京タワー") == ["東", "京", "タ", "ワ", "ー"]
    assert recall_words("ﾀﾜｰ") == ["タ", "ワ", "ー"]  # half-width katakana -> full width (NFKC)
    assert recall_words("1633年に、再建。") == ["1633", "年", "に", "再", "建"]
    assert recall_words("서울 특별시") == ["서", "울", "특", "별", "시"]
    assert recall_words("J.R.R. Tolkien's") == ["j", "r", "r", "tolkien", "s"]


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        ("It was built by Gustave Eiffel.", "Gustave Eiffel", 1.0),
        ("Eiffel", "Gustave Eiffel", 1 / 2),
        ("東京の塔です", "東京タワー", 2 / 5),  # 東, 京 of 東 京 タ ワ ー
        ("1633年です。", "1633年", 1.0),  # 1633, 年
        ("1634年", "1633年", 1 / 2),
        ("서울에서", "서울특별시", 2 / 5),
        ("New York", "New York, New York", 2 / 4),  # words count with their multiplicity
        ("", "Scotland", 0.0),
        ("anything", "!!!", None),  # a gold answer with no words cannot be judged
    ],
)
def test_answer_recall_hand_computed(prediction, gold, expected):
    assert answer_recall(prediction, gold) == (None if expected is None else pytest.approx(expected))


def test_judge_by_recall_makes_judgement_rows():
    eclektic_set = two_question_set()  # gold: q1 ja 1633年, q1 en In 1633, q2 en John Fowler and Benjamin Baker
    texts = {("q1", "ja"): "1633年だと思います", ("q1", "en"): "1633",
             ("q2", "en"): "Benjamin Baker and John Fowler designed it", ("q2", "ja"): None}
    answers = pa.Table.from_pylist([
        AnswerRow(q_id=q_id, lang=lang, source_lang="ja" if q_id == "q1" else "en", setting="closed-book",
                  sample=0, model="m", text=text, error=None if text else "empty output", attempts=1,
                  cached=False, cost_usd=0.0, temperature=0.0, seed=0).model_dump()
        for (q_id, lang), text in texts.items()
    ], schema=ANSWER_SCHEMA)
    table = judge_by_recall(answers, eclektic_set)
    assert table.schema == JUDGEMENT_SCHEMA
    rows = {(r["q_id"], r["lang"]): r for r in table.to_pylist()}
    assert {r["judge"] for r in rows.values()} == {"recall"}
    assert (rows["q1", "ja"]["verdict"], float(rows["q1", "ja"]["raw"])) == (True, 1.0)
    assert (rows["q1", "en"]["verdict"], float(rows["q1", "en"]["raw"])) == (False, 0.5)  # 'in' missing
    assert (rows["q2", "en"]["verdict"], float(rows["q2", "en"]["raw"])) == (True, 1.0)
    assert rows["q2", "ja"]["verdict"] is None and rows["q2", "ja"]["error"] == "the answer is invalid: empty output"
    lenient = {(r["q_id"], r["lang"]): r["verdict"] for r in judge_by_recall(answers, eclektic_set,
                                                                             threshold=0.5).to_pylist()}
    assert lenient["q1", "en"] is True
    with pytest.raises(CrossknowError, match="threshold"):
        judge_by_recall(answers, eclektic_set, threshold=0.0)


def plain_gold_loss(scorer, context: str, continuation: str) -> tuple[float, bool]:
    """Mean token loss of `continuation` after `context` and whether greedy decoding writes it, by one
    forward pass over tok(context) + the continuation's tokens of tok(context + continuation)."""
    import torch

    tokenizer, model = scorer.tokenizer, scorer.model
    ctx = tokenizer(context)["input_ids"]
    whole = tokenizer(context + continuation)["input_ids"]
    assert whole[: len(ctx)] == ctx
    targets = whole[len(ctx):]
    with torch.no_grad():
        logits = model(torch.tensor([ctx + targets])).logits[0].float()
    logprobs = torch.log_softmax(logits, dim=-1)
    positions = range(len(ctx) - 1, len(ctx) + len(targets) - 1)
    total = sum(float(logprobs[p, t]) for p, t in zip(positions, targets, strict=True))
    greedy = all(int(logits[p].argmax()) == t for p, t in zip(positions, targets, strict=True))
    return -total / len(targets), greedy


@pytest.mark.slow
def test_gold_loss_through_the_engine_equals_a_plain_forward_pass(embedded_scorer):
    base = two_question_set()
    repeated = "one two three four five\none two three four five\none two three four five"
    extra = [
        Question("q3", "en", "en", repeated, "one two three four five", "c", None, None),
        Question("q4", "en", "en", "What is it?", "\nmerged", "c", None, None),  # '\n' + '\n' merge into one token
    ]
    eclektic_set = EclekticSet("gold", "main", base.questions + extra,
                               {**base.targets, "q3": ("en",), "q4": ("en",)})
    table = judge_by_gold_loss(eclektic_set, embedded_scorer)
    assert table.schema == JUDGEMENT_SCHEMA
    rows = {(r["q_id"], r["lang"]): r for r in table.to_pylist()}
    assert len(rows) == 6 and {r["judge"] for r in rows.values()} == {"gold-loss"}
    assert {r["sample"] for r in rows.values()} == {0}
    for q_id, _, lang in eclektic_set.examples():
        if q_id == "q4":
            continue
        question = eclektic_set.question(q_id, lang)
        loss, greedy = plain_gold_loss(embedded_scorer, question.question + "\n", question.answer)
        row = rows[q_id, lang]
        assert math.isclose(float(row["raw"]), loss, rel_tol=1e-4, abs_tol=1e-4), (q_id, lang, row["raw"], loss)
        assert row["verdict"] is greedy and row["error"] is None
    assert rows["q3", "en"]["verdict"] is True  # the repeated line is what greedy decoding writes next
    assert rows["q1", "ja"]["verdict"] is False
    merged = rows["q4", "en"]
    assert merged["verdict"] is None and merged["error"].startswith("unscorable:") and merged["raw"] == ""
