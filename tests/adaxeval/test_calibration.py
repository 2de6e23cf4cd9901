"""The calibration of a base model's exact P(yes) (fact detection and quality judgements, completion form): the raw
value is kept beside the calibrated one, config.yaml says whether calibration was on, and it can be turned off."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from crossknow.adaxeval.facts import KeepRule, fact_rows
from crossknow.adaxeval.filters import quality_rows
from crossknow.adaxeval.pipeline import resolve_config
from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.records import (
    DetectorVote,
    DistractorRecord,
    GenerateConfig,
    QualityRecord,
    QueryRecord,
    SentenceRecord,
)
from crossknow.errors import CrossknowError
from crossknow.generation.structured import StructuredClient
from crossknow.models.generator import GenerateRequest, GenerateResult, Usage

from .test_items import CALL, _cloze

PROMPTS = PromptTable.load()
SENTENCE = SentenceRecord(id="d#0", doc_id="d", pair_id="p", lang="en", index=0,
                          text="Metformin suppresses hepatic gluconeogenesis.")
RAW, LEAN = 0.3, 0.6
"""The scripted base model's P(yes) after a prompt holding real input, and after its content-free copy."""
CALIBRATED = (RAW / (1 - RAW)) / (LEAN / (1 - LEAN)) / (1 + (RAW / (1 - RAW)) / (LEAN / (1 - LEAN)))
"""By hand: the odds divided by the lean's odds, back to a probability (2/9)."""


class ScoringBaseModel:
    """A base model (completion form) that scores: P(yes) = RAW after a prompt that holds `marker`, LEAN after any
    other (the content-free prompts); it writes a subject line where it is asked to generate."""

    name = "base"
    model_id = "base-1"
    prompt_format = "completion"

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        return [GenerateResult(text=" Metformin", backend=self.name, model_id=self.model_id, usage=Usage(1, 1))
                for _ in requests]

    def score_answers(self, requests) -> list[float]:
        p_yes = [RAW if self.marker in r.prompt else LEAN for r in requests]
        return [math.log(p if r.continuation.strip() == "yes" else 1 - p) for r, p in zip(requests, p_yes, strict=True)]


def test_a_vote_keeps_the_raw_p_yes_beside_the_calibrated_one():
    client = StructuredClient(ScoringBaseModel(SENTENCE.text), max_attempts=1)
    [row] = fact_rows([SENTENCE], [("base", client)], PROMPTS, KeepRule("sum", 0.5, 1))
    [vote] = row.record.votes
    assert vote.yes_baseline == pytest.approx(LEAN)
    assert vote.confidence == pytest.approx(CALIBRATED, abs=1e-6)
    assert vote.raw_yes_probability == pytest.approx(RAW)


def test_calibration_can_be_turned_off_and_the_raw_p_yes_then_decides():
    client = StructuredClient(ScoringBaseModel(SENTENCE.text), max_attempts=1)
    [row] = fact_rows([SENTENCE], [("base", client)], PROMPTS, KeepRule("sum", 0.25, 1), calibrate=False)
    [vote] = row.record.votes
    assert vote.yes_baseline is None
    assert vote.confidence == pytest.approx(RAW) and vote.raw_yes_probability == pytest.approx(RAW)
    assert row.record.passes_sum  # 0.3 > 0.25, where the calibrated 0.22 would not pass


def _item() -> DistractorRecord:
    query = QueryRecord(cloze_record=_cloze(), reasoning="", question="What does insulin reduce?", call=CALL)
    return DistractorRecord(query=query, distractors=["blood pressure", "heart rate", "body weight"],
                            length_ratio=0.5, answer_longest=True, call=CALL)


def test_quality_judgements_keep_the_raw_p_yes_and_can_skip_calibration():
    client = StructuredClient(ScoringBaseModel("What does insulin reduce?"), max_attempts=1)
    partner = lambda pair_id, lang: ("ja", "文書")  # noqa: E731
    [row] = quality_rows([_item()], ("w", client), PROMPTS, partner, True)
    record = row.record
    # the two judgements that show the question to the judge: raw 0.3 against a lean of 0.6
    for name in ("options_question", "support"):
        assert record.raw_yes_probability[name] == pytest.approx(RAW)
        assert record.yes_probability[name] == pytest.approx(CALIBRATED, abs=1e-6)
        assert record.yes_baseline[name] == pytest.approx(LEAN)
    [row] = quality_rows([_item()], ("w", client), PROMPTS, partner, True, calibrate=False)
    assert row.record.yes_baseline == {}
    assert row.record.yes_probability["support"] == pytest.approx(RAW)
    assert row.record.raw_yes_probability == row.record.yes_probability


def test_config_yaml_says_whether_calibration_was_on():
    settings = {"corpus": "c.jsonl", "detectors": ["default"], "writer": "default"}
    assert resolve_config(GenerateConfig(**settings), PROMPTS)["calibrate_yes"] is True
    assert resolve_config(GenerateConfig(**settings, calibrate_yes=False), PROMPTS)["calibrate_yes"] is False


def test_records_written_before_the_raw_p_yes_was_kept_still_read():
    """A resumed run reads its committed rows back: a vote or a judgement without the raw value still parses."""
    vote = DetectorVote.model_validate({
        "detector": "d", "factuality": "yes", "confidence": 0.7, "yes_baseline": 0.6, "triple": None,
        "reasoning": "r", "call": CALL.model_dump(),
    })
    assert vote.raw_yes_probability is None
    judged = QualityRecord.model_validate({
        "item": _item().model_dump(), "cloze": "Good", "paraphrase": "Good", "options_cloze": "Good",
        "options_question": "Good", "support": 2, "in_language_call": CALL.model_dump(),
        "cross_language_call": CALL.model_dump(), "yes_probability": {"cloze": 0.7},
    })
    assert judged.raw_yes_probability == {}


def test_a_run_from_before_the_switch_is_refused_clearly_not_resumed_differently(run_fake, tmp_path):
    """config.yaml records the switch; a run directory whose config.yaml predates it (no `calibrate_yes`), or one
    made with the other setting, is refused with a message naming the key, before any stage row is read."""
    run_fake(out=tmp_path / "run", sample=1, docs=1)
    config = tmp_path / "run" / "config.yaml"
    assert "calibrate_yes: true" in config.read_text()
    with pytest.raises(CrossknowError, match=r"another config \(calibrate_yes: True -> False\)"):
        run_fake(out=tmp_path / "run", sample=1, docs=1, calibrate_yes=False)
    config.write_text(config.read_text().replace("calibrate_yes: true\n", ""))
    with pytest.raises(CrossknowError, match=r"another config \(calibrate_yes: None -> True\)"):
        run_fake(out=tmp_path / "run", sample=1, docs=1)
