"""`evaluate --boundary literal` (the AdaXEval authors' tokenisation) on real paper examples with the real embedded
model: recorded in the run's config and metrics, named in the results table's title, refused where it cannot apply."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from pydantic import ValidationError

from crossknow.cli.tables import metrics_table
from crossknow.errors import CrossknowError
from crossknow.evaluation.pipeline import run_evaluate
from crossknow.evaluation.records import EvaluateConfig
from tests.conftest import SHARED_DATA

EXAMPLES = SHARED_DATA / "adaxeval-paper-examples.jsonl"
YORUBA = SHARED_DATA / "cross-lingual-pitfalls" / "Yoruba.json"


def _config(data: Path | str, **overrides) -> EvaluateConfig:
    return EvaluateConfig(**({"model": "default", "data": str(data), "device": "cpu", "batch_size": 4} | overrides))


def _english_examples(path: Path, n: int) -> Path:
    lines = [line for line in EXAMPLES.read_text(encoding="utf-8").splitlines() if json.loads(line)["lang"] == "en"]
    path.write_text("\n".join(lines[:n]) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
def test_literal_is_recorded_titled_and_scores_the_authors_tokens(embedded_scorer, tmp_path):
    data = _english_examples(tmp_path / "en.jsonl", 3)  # 3 cloze + 3 question items, a space before each [BLANK]
    scorer = lambda spec, options: embedded_scorer  # noqa: E731
    literal = run_evaluate(_config(data, boundary="literal"), tmp_path / "literal", make_scorer=scorer)
    moved = run_evaluate(_config(data), tmp_path / "moved", make_scorer=scorer)

    assert yaml.safe_load((tmp_path / "literal" / "config.yaml").read_text(encoding="utf-8"))["boundary"] == "literal"
    assert json.loads((tmp_path / "literal" / "metrics.json").read_text(encoding="utf-8"))["boundary"] == "literal"
    assert (literal.boundary, moved.boundary) == ("literal", "moved")
    assert "boundary literal = the AdaXEval authors' tokenisation" in str(metrics_table(literal).title)
    assert "boundary moved" in str(metrics_table(moved).title)

    table = pq.read_table(tmp_path / "literal" / "scores.parquet").to_pylist()
    rows = {(r["item_id"], r["option_index"]): r for r in table}
    reference = pq.read_table(tmp_path / "moved" / "scores.parquet").to_pylist()
    assert len(rows) == len(reference) == 24
    for ref in reference:
        row = rows[(ref["item_id"], ref["option_index"])]
        # cloze: the option's first word leaves with the context's trailing space; question: the same tokens
        assert row["n_tokens"] == ref["n_tokens"] - (1 if ref["kind"] == "cloze" else 0), ref["item_id"]
        assert row["n_chars"] == ref["n_chars"]  # the scored text's length is the rule's, not the tokeniser's

    with pytest.raises(CrossknowError, match=r"another config \(boundary: 'literal' -> 'moved'\)"):
        run_evaluate(_config(data), tmp_path / "literal", make_scorer=scorer)


def test_literal_is_refused_under_the_lm_eval_rule_and_with_a_server(tmp_path):
    def no_scorer(spec, options):
        raise AssertionError("nothing may be built")

    with pytest.raises(CrossknowError, match="adaxeval rule only; this run's rule is lm-eval"):
        run_evaluate(_config(YORUBA, boundary="literal", limit=1), tmp_path / "run", make_scorer=no_scorer)
    assert not (tmp_path / "run").exists()  # refused before the run directory was made
    with pytest.raises(ValidationError, match="needs the model's tokenizer on this machine"):
        _config("sample", model="openai:gemma", base_url="http://127.0.0.1:9/v1", boundary="literal")
