"""models.json: read in one format whatever wrote it, refused by name when it is not a models file."""

from __future__ import annotations

import pytest

from crossknow.errors import CrossknowError
from crossknow.store.models_file import read_models, record_model


def test_an_older_runs_strings_are_read_as_entries_and_rewritten_with_the_next_one(tmp_path):
    (tmp_path / "models.json").write_text('{"openai:qwen@http://gpu1:8000/v1": "openai:qwen#chat", '
                                          '"hf:w": "hf:w"}', encoding="utf-8")
    assert read_models(tmp_path) == {
        "openai:qwen@http://gpu1:8000/v1": {"model": "openai:qwen", "prompt_format": "chat"}, "hf:w": {"model": "hf:w"}}
    record_model(tmp_path, "default", "default", "gemma", "completion")
    assert (tmp_path / "models.json").read_text(encoding="utf-8").count('"prompt_format"') == 2


@pytest.mark.parametrize("text", ["[1, 2]", '{"a": 3}', "{not json"])
def test_a_file_that_is_no_models_file_is_refused_by_name(tmp_path, text):
    (tmp_path / "models.json").write_text(text, encoding="utf-8")
    with pytest.raises(CrossknowError, match="models.json"):
        read_models(tmp_path)


def test_a_run_without_a_models_file_has_used_no_model(tmp_path):
    assert read_models(tmp_path) == {}


def test_a_label_that_now_resolves_to_another_model_is_refused_and_the_file_kept(tmp_path):
    record_model(tmp_path, "default", "default", "gemma (llama.cpp 0.3.36)", "completion")
    record_model(tmp_path, "default", "default", "gemma (llama.cpp 0.3.36)", "completion")  # the same: nothing to do
    before = (tmp_path / "models.json").read_text(encoding="utf-8")
    with pytest.raises(CrossknowError, match="default ran as default:gemma .llama.cpp 0.3.36. in this run and would "
                       "now run as default:gemma .dequantised.; .*--generator-backend"):
        record_model(tmp_path, "default", "default", "gemma (dequantised)", "completion")
    assert (tmp_path / "models.json").read_text(encoding="utf-8") == before
