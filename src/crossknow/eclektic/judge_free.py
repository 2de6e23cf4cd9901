"""Judge-free judgements for offline use: crossknow's own, not the paper's (which judges with an LLM).

`recall`: the share of the gold answer's words (NFKC, casefolded, punctuation as spaces; each CJK, kana or Hangul
character a word) found, with multiplicity, in the answer; correct at >= 0.75 by default (crossknow's choice).
`gold-loss`, for a local model: the gold answer scored as the continuation of the question and a newline; correct
when greedy decoding would write it (`raw` is the mean token loss; its rows carry sample 0). docs/eclektic.md.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Sequence

import pyarrow as pa

from crossknow.eclektic.answer import rows_table
from crossknow.eclektic.examples import EclekticSet, Question
from crossknow.eclektic.judge import JUDGEMENT_SCHEMA, judgement_row, unasked_judgement
from crossknow.eclektic.prompts import answer_prompt
from crossknow.errors import CrossknowError, UnscorableRequest
from crossknow.models.protocol import Scorer, ScoreRequest, ScoreResult
from crossknow.scoring.normalise import Normalisation, option_loss

RECALL_THRESHOLD = 0.75
"""Default recall at or above which an answer is correct (see the module docstring)."""
RECALL_JUDGE = "recall"
GOLD_LOSS_JUDGE = "gold-loss"

_OWN_WORD_RANGES = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x3005, 0x3007),  # 々 〆 〇
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3130, 0x318F),  # Hangul Compatibility Jamo
    (0x31F0, 0x31FF),  # Katakana Phonetic Extensions
    (0x3400, 0x4DBF),  # CJK Unified Ideographs Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xA960, 0xA97F),  # Hangul Jamo Extended-A
    (0xAC00, 0xD7FF),  # Hangul Syllables, Jamo Extended-B
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0x20000, 0x323AF),  # CJK Unified Ideographs Extensions B-H, Compatibility Supplement
)
"""Characters that are words of their own: CJK ideographs, Hiragana, Katakana, Hangul."""


def _own_word(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _OWN_WORD_RANGES)


def recall_words(text: str) -> list[str]:
    """The words of `text` after normalisation (see the module docstring), in order."""
    words: list[str] = []
    current: list[str] = []
    for char in unicodedata.normalize("NFKC", text).casefold():
        if char.isspace() or unicodedata.category(char).startswith("P") or _own_word(char):
            if current:
                words.append("".join(current))
                current = []
            if _own_word(char):
                words.append(char)
        else:
            current.append(char)
    if current:
        words.append("".join(current))
    return words


def answer_recall(prediction: str, gold: str) -> float | None:
    """Share of the gold answer's words (with multiplicity) found in `prediction`; None when the gold
    answer has no words at all."""
    gold_words = Counter(recall_words(gold))
    if not gold_words:
        return None
    found = gold_words & Counter(recall_words(prediction))
    return sum(found.values()) / sum(gold_words.values())


def judge_by_recall(answers: pa.Table, eclektic_set: EclekticSet, *, threshold: float = RECALL_THRESHOLD) -> pa.Table:
    """The judgements table of judge 'recall': each answer row against its language's gold answer;
    `raw` holds the recall. An invalid answer, or a gold answer with no words, gives a null verdict."""
    if not 0.0 < threshold <= 1.0:
        raise CrossknowError(f"the recall threshold must be in (0, 1], got {threshold}")
    out = []
    for row in answers.to_pylist():
        gold = eclektic_set.question(row["q_id"], row["lang"]).answer
        if not row["text"]:
            out.append(unasked_judgement(row, RECALL_JUDGE))
            continue
        recall = answer_recall(row["text"], gold)
        if recall is None:
            out.append(judgement_row(row, RECALL_JUDGE, None, "", f"the gold answer {gold!r} has no words"))
        else:
            out.append(judgement_row(row, RECALL_JUDGE, recall >= threshold, repr(recall), None))
    return rows_table(out, JUDGEMENT_SCHEMA)


def gold_request(question: Question) -> ScoreRequest:
    """The scoring request of the gold answer given the closed-book prompt (see the module docstring)."""
    return ScoreRequest(answer_prompt("closed-book", question) + "\n", question.answer)


def judge_by_gold_loss(eclektic_set: EclekticSet, scorer: Scorer) -> pa.Table:
    """The judgements table of judge 'gold-loss' for every example of `eclektic_set` (sample 0): `raw`
    holds the mean token loss of the gold answer, `verdict` whether greedy decoding would write it.
    A request the scorer cannot score (too long, a token merged across the boundary) is recorded
    with a null verdict and the scorer's reason."""
    questions = [eclektic_set.question(q_id, lang) for q_id, _, lang in eclektic_set.examples()]
    results = _score_each(scorer, [gold_request(q) for q in questions])
    out = []
    for question, result in zip(questions, results, strict=True):
        row = {"q_id": question.q_id, "lang": question.lang, "source_lang": question.source_lang, "sample": 0}
        if isinstance(result, str):
            out.append(judgement_row(row, GOLD_LOSS_JUDGE, None, "", result))
        else:
            loss = float(option_loss(Normalisation.MEAN_TOKEN, result.logprob_sum, result.n_tokens, 0, 0))
            out.append(judgement_row(row, GOLD_LOSS_JUDGE, result.greedy, repr(loss), None))
    return rows_table(out, JUDGEMENT_SCHEMA)


def _score_each(scorer: Scorer, requests: Sequence[ScoreRequest]) -> list[ScoreResult | str]:
    """The scorer's result per request, or why it could not be scored; the other requests go on."""
    results: list[ScoreResult | str | None] = [None] * len(requests)
    pending = list(range(len(requests)))
    while pending:
        try:
            scored = scorer.score([requests[k] for k in pending])
        except UnscorableRequest as error:
            if error.index is None and len(pending) > 1:  # the backend could not say which: one at a time
                for k in pending:
                    results[k] = _score_each(scorer, [requests[k]])[0]
                break
            failed = pending.pop(error.index or 0)
            results[failed] = f"unscorable: {error}"
            continue
        for k, result in zip(pending, scored, strict=True):
            results[k] = result
        break
    return results  # type: ignore[return-value]

