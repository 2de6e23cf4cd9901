"""The rewrite stage against the real llama.cpp chat server on 127.0.0.1 (the embedded Gemma 3 270M): every
request is answered and decided, and a second run pays for nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crossknow.data.corpus import Document
from crossknow.perturb.pipeline import run_perturb
from crossknow.perturb.records import PerturbConfig
from crossknow.perturb.sentence_level import segment


@pytest.mark.slow
def test_rewrites_through_the_llama_cpp_chat_server(llama_chat_server: str, tmp_path: Path) -> None:
    doc = Document(id="short-ja", lang="ja", text="酵素は熱に弱い。細胞は分裂して増える。血糖値が下がった。")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(doc.model_dump_json() + "\n", encoding="utf-8")
    config = PerturbConfig(corpus=str(corpus), methods=["syntax", "translation"], sentence_x=[34],
                           generator="openai:gemma-3-270m", base_url=llama_chat_server, concurrency=1,
                           max_tokens=48, max_attempts=2, cache=str(tmp_path / "requests.sqlite"))
    summary = run_perturb(config, tmp_path / "run")
    assert summary.rewrite_calls >= 2  # one sentence (round(34% of 3) = 1) in two patterns, retries on top
    lines = (tmp_path / "run" / "variants.jsonl").read_text(encoding="utf-8").splitlines()
    variants = {v["method"]: v for v in map(json.loads, lines)}
    failures = [json.loads(f) for f in (tmp_path / "run" / "failures.jsonl").read_text(encoding="utf-8").splitlines()]
    # each pattern is a variant or a recorded failure: nothing dropped
    assert sorted([m for m in variants if m != "original"] + [f["method"] for f in failures]) == ["syntax",
                                                                                                 "translation"]
    sentences = segment(doc.text, "ja").sentences
    for method, variant in variants.items():
        if method != "original":  # two of the three sentences are kept verbatim, one is not
            assert sum(s in variant["text"] for s in sentences) == 2, variant["text"]
    again = run_perturb(config, tmp_path / "again")
    assert (again.rewrite_calls, again.rewrite_cached_calls) == (0, summary.rewrite_calls)
    assert (tmp_path / "again" / "variants.jsonl").read_text(encoding="utf-8").splitlines() == lines
