"""The fast tokenizer load against AutoTokenizer on the embedded model, on real English and Japanese text."""

from __future__ import annotations

import json
import shutil

import pytest
from transformers import AutoTokenizer

from crossknow.data.adaxeval import read_adaxeval
from crossknow.data.pitfalls import read_pitfalls
from crossknow.models.boundary import encode_pair
from crossknow.models.fast_tokenizer import (
    PROBES,
    VERDICT_FILE,
    differences,
    has_current_verdict,
    load_fast_tokenizer,
    load_tokenizer,
    record_verdict,
)

from ..conftest import SHARED_DATA as SHARED


def real_texts() -> list[str]:
    """A few hundred texts as the scorer sees them: AdaXEval prompts, options and cloze halves, Pitfalls questions."""
    texts: list[str] = []
    for item in read_adaxeval(SHARED / "adaxeval-paper-examples.jsonl").items:
        texts += [item.prompt, *item.options, *item.prompt.split("[BLANK]"), item.prompt + "\n"]
    for item in read_pitfalls(SHARED / "cross-lingual-pitfalls" / "Japanese.json", limit=40).items:
        texts += [item.prompt, *item.options]
    return texts


@pytest.fixture(scope="module")
def tokenizers(embedded_checkpoint_dir):
    return load_fast_tokenizer(embedded_checkpoint_dir), AutoTokenizer.from_pretrained(embedded_checkpoint_dir)


def test_fast_load_gives_autotokenizers_ids_on_real_text(tokenizers):
    fast, auto = tokenizers
    texts = real_texts() + list(PROBES)
    assert len(texts) >= 300
    assert any("の" in text for text in texts) and any("the" in text for text in texts)
    for text in texts:
        assert fast(text).input_ids == auto(text).input_ids, text
    assert differences(fast, auto, texts) == []


def test_fast_load_keeps_special_tokens_and_bos_handling(tokenizers):
    fast, auto = tokenizers
    for name in ("bos_token_id", "eos_token_id", "pad_token_id", "unk_token_id"):
        assert getattr(fast, name) == getattr(auto, name), name
    assert fast("").input_ids == [fast.bos_token_id]  # an empty context is just BOS
    assert fast("Hello").input_ids[0] == fast.bos_token_id
    assert fast("<bos>x<eos>").input_ids == auto("<bos>x<eos>").input_ids  # special tokens in text are parsed
    pairs = [("The capital of France is ", "Paris."), ("日本の首都は", "東京です。"), ("", "Insulin")]
    for context, continuation in pairs:
        assert encode_pair(lambda t: fast(t).input_ids, context, continuation) == encode_pair(
            lambda t: auto(t).input_ids, context, continuation
        )


def test_differences_finds_a_tokenizer_that_is_not_the_same(tokenizers, embedded_checkpoint_dir):
    fast, _ = tokenizers
    other = AutoTokenizer.from_pretrained(embedded_checkpoint_dir)
    other.add_tokens(["首都は東京"])  # a new word changes the ids of every text that holds it
    assert differences(fast, other, ["日本の首都は東京です。", "Paris"]) == ["ids of '日本の首都は東京です。'"]


def test_fast_load_only_under_a_current_verdict(tokenizers, embedded_checkpoint_dir, tmp_path, monkeypatch):
    """The verdict is made for real (AutoTokenizer against the fast load); which load `load_tokenizer` then picks is
    seen through a stand-in for AutoTokenizer's, which costs seconds per load of the 262k-word vocabulary."""
    fast, auto = tokenizers
    assert type(fast) is not type(auto)  # the two loads are told apart by their classes
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(embedded_checkpoint_dir / name, checkpoint / name)
    auto_loads: list[str] = []
    real_auto_load = AutoTokenizer.from_pretrained

    def auto_load(path, revision=None, **options):
        auto_loads.append(str(path))
        return "AutoTokenizer's load"

    monkeypatch.setattr(AutoTokenizer, "from_pretrained", auto_load)
    assert not has_current_verdict(checkpoint)
    assert load_tokenizer(str(checkpoint), None) == "AutoTokenizer's load"
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", real_auto_load)
    assert record_verdict(checkpoint) is True
    assert has_current_verdict(checkpoint)
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", auto_load)
    assert type(load_tokenizer(str(checkpoint), None)) is type(fast) and auto_loads == [str(checkpoint)]
    verdict = json.loads((checkpoint / VERDICT_FILE).read_text())
    (checkpoint / VERDICT_FILE).write_text(json.dumps({**verdict, "transformers": "0.0.0"}))  # made by another version
    assert not has_current_verdict(checkpoint)
    assert load_tokenizer(str(checkpoint), None) == "AutoTokenizer's load" and len(auto_loads) == 2
