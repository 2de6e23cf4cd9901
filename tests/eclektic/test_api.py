"""`crossknow.eclektic.score(judgements)` from Python: the command's scoring of judgements made elsewhere, on records
held in memory, checked against S counted by hand."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import crossknow.eclektic
from crossknow.eclektic.run import score_judgement_file
from crossknow.eclektic.run_config import ScoreConfig
from crossknow.errors import InputError

JUDGEMENTS = [  # q1's source is English, q2's Japanese
    {"q_id": "q1", "source_lang": "en", "target_lang": "en", "correct": True},
    {"q_id": "q1", "source_lang": "en", "target_lang": "ja", "correct": True},
    {"q_id": "q1", "source_lang": "en", "target_lang": "fr", "correct": False},
    {"q_id": "q2", "source_lang": "ja", "target_lang": "ja", "correct": False},
    {"q_id": "q2", "source_lang": "ja", "target_lang": "en", "correct": True},
]


def test_scores_from_memory_are_the_commands_and_the_papers_definitions(tmp_path):
    metrics = crossknow.eclektic.score(JUDGEMENTS)
    # the examples (source rows left out): q1/ja S=1, q1/fr S=0, q2/en S=0 (its source is wrong); K = q1's two
    assert metrics.overall.value == pytest.approx(1 / 3) and metrics.transfer.value == pytest.approx(1 / 2)
    path = tmp_path / "j.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in JUDGEMENTS), encoding="utf-8")
    assert score_judgement_file(path, tmp_path / "command", ScoreConfig()) == metrics
    included = crossknow.eclektic.score(pd.DataFrame(JUDGEMENTS), source_rows="include", out=tmp_path / "kept")
    assert included.overall.value == pytest.approx(2 / 5) and (tmp_path / "kept" / "metrics.json").is_file()
    with pytest.raises(InputError, match=r"judgements\.jsonl, line 1: field 'correct'"):
        crossknow.eclektic.score([{"q_id": "q", "source_lang": "en", "target_lang": "en"}])
