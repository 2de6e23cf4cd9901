"""`crossknow.evaluate(model, items)` from Python: the examples of docs/python.md run as written, a loaded model
scores as its spec does, and records in memory go through the command's reader."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import crossknow
from crossknow.errors import CrossknowError, InputError
from crossknow.evaluation.api import tensors_hash
from tests.gpu.tiny_hf_model import write_tiny_model
from tests.pitfalls.test_evaluation import RELEASE

DOC = Path(__file__).resolve().parents[2] / "docs" / "python.md"
HUB_ID = '"Qwen/Qwen2.5-0.5B"'
"""The doc's example model, which the test replaces by a local tiny model (no hub here)."""
TRAIN_RUN = '"runs/train"'
"""The doc's example training run, which the test replaces by the suite's tiny one."""
PAIR_FILE = '"Japanese.json"'
"""The doc's released pair file, which the test reads from the project's copy of the release."""

ITEMS = [
    {"id": "q1", "lang": "en", "kind": "question", "prompt": "What is the capital of France?",
     "options": ["Berlin", "Paris", "Madrid", "Rome"], "answer": 1},
    {"id": "c1", "lang": "en", "kind": "cloze", "prompt": "Water boils at [BLANK] degrees Celsius at sea level.",
     "options": ["50", "100", "150", "200"], "answer": 1},
]


def doc_blocks() -> list[tuple[str, str | None]]:
    """(code, the output block that follows it or None) for each python block of the doc, in order."""
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"```(\w*)\n(.*?)```", text, re.S)
    pairs = []
    for k, (kind, body) in enumerate(blocks):
        if kind == "python":
            following = blocks[k + 1] if k + 1 < len(blocks) and blocks[k + 1][0] == "" else None
            pairs.append((body, following[1] if following else None))
    return pairs


def test_the_docs_examples_run_and_print_what_the_doc_shows(embedded_checkpoint_dir, random_train_run, tmp_path,
                                                            monkeypatch, capsys):
    tiny = write_tiny_model(tmp_path / "tiny")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    blocks = doc_blocks()
    assert len(blocks) == 7 and HUB_ID in blocks[2][0] and TRAIN_RUN in blocks[3][0] and PAIR_FILE in blocks[4][0]
    for code, shown in blocks:
        code = code.replace(HUB_ID, repr(str(tiny))).replace(TRAIN_RUN, repr(str(random_train_run.out)))
        code = code.replace(PAIR_FILE, repr(str(RELEASE / "Japanese.json")))
        exec(compile(code, str(DOC), "exec"), namespace)
        printed = capsys.readouterr().out
        if shown is not None:
            assert printed == shown
    assert sorted(namespace["accuracy"].mean().index) == [0, 2, 4]
    assert (tmp_path / "runs" / "notebook" / "scores.parquet").is_file()
    again = crossknow.evaluate("default", namespace["items"], out=tmp_path / "runs" / "notebook")
    assert again.attrs["metrics"]["items_scored_this_run"] == 0
    pd.testing.assert_frame_equal(again, namespace["scores"], check_like=True)


def test_a_loaded_model_scores_as_its_spec_and_is_identified_by_its_bytes(embedded_checkpoint_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(embedded_checkpoint_dir)
    tokenizer = AutoTokenizer.from_pretrained(embedded_checkpoint_dir)
    loaded = crossknow.evaluate(model, ITEMS, tokenizer=tokenizer)
    by_spec = crossknow.evaluate("default", ITEMS)
    assert loaded["loss"].tolist() == pytest.approx(by_spec["loss"].tolist(), abs=1e-4)
    first = loaded.attrs["metrics"]["model"]
    assert first["spec"] == f"hf:{embedded_checkpoint_dir}" and first["weights"].startswith("memory:sha256:")
    with pytest.raises(CrossknowError, match="needs its tokenizer"):
        crossknow.evaluate(model, ITEMS)
    with pytest.raises(CrossknowError, match="on cpu in float32; move or cast it"):
        crossknow.evaluate(model, ITEMS, tokenizer=tokenizer, dtype="bfloat16")
    assert tensors_hash(model) == first["weights"]  # what the run recorded
    model.get_output_embeddings().weight.data[0, 0] += 1.0  # the same name, other weights
    assert tensors_hash(model) != first["weights"]


def test_records_in_memory_go_through_the_commands_reader(tmp_path):
    bad = {"id": "x", "lang": "en", "kind": "question", "prompt": "Which?", "options": ["a", "a"], "answer": 0}
    with pytest.raises(InputError, match=r"items\.jsonl, line 3: field 'options': option 1 \('a'\) repeats"):
        crossknow.evaluate("default", pd.DataFrame([*ITEMS, bad]), out=tmp_path / "run")
    with pytest.raises(CrossknowError, match="a list of dicts"):
        crossknow.evaluate("default", ["not a record"])
