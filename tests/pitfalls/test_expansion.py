"""Expansion of seed pairs into other languages, on real release files, with a scripted translator behind
the real StructuredClient, request cache and run directory; and one real run against the llama.cpp server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from crossknow.models.generator import GenerateResult, GenerationFailed, Usage
from crossknow.pitfalls.affinity.expansion import run_expand
from crossknow.pitfalls.affinity.expansion_records import EXPANDED_SCHEMA, ExpandConfig
from crossknow.pitfalls.affinity.seeds import read_seed_file, sample_seeds
from crossknow.pitfalls.flaws import read_pair_file
from crossknow.pitfalls.pair_translation import translated_pair_schema
from crossknow.pitfalls.proxy import ProxyLLM
from crossknow.store.request_cache import RequestCache
from crossknow.store.run_dir import ShardedTable

from ..conftest import SHARED_DATA

DATA = SHARED_DATA / "cross-lingual-pitfalls"
FRENCH, GERMAN = DATA / "French.json", DATA / "German.json"
NAMES = {"French": "FR", "German": "DE"}
APPENDIX_E = {"en français": "FR", "ins Deutsche": "DE"}
"""How Appendix E's French and German translation templates name their target language."""


def _between(prompt: str, start: str, end: str) -> str:
    return prompt.split(start + "\n", 1)[1].split("\n" + end, 1)[0]


class ScriptedTranslator:
    """Writes '<XX>(text)' for every translation into the language named in the prompt (XX = FR or DE).
    `sabotage(original) -> output dict or None` may replace the structured answer for an original part;
    `fail` makes every request fail in transport."""

    name = "scripted"
    model_id = "translator"

    def __init__(self, sabotage=None, fail=False):
        self.sabotage = sabotage or (lambda original: None)
        self.fail = fail
        self.prompts: list[str] = []

    def generate(self, requests):
        prompts = [r.messages[-1].content for r in requests]
        self.prompts += prompts
        results = [GenerateResult(self._text(p), "scripted", "translator", Usage(10, 5)) for p in prompts]
        if self.fail:
            raise GenerationFailed([None] * len(results), {i: "connection refused" for i in range(len(results))})
        return results

    def _text(self, prompt: str) -> str:
        if "[The Start of the Choices]" in prompt:  # Appendix E's template for French and German
            code = next(code for words, code in APPENDIX_E.items() if words in prompt)
            original = _between(prompt, "[The Start of the Text]", "[The End of the Text]")
            choices = json.loads(_between(prompt, "[The Start of the Choices]", "[The End of the Choices]"))
            answer = _between(prompt, "[The Start of the Answer]", "[The End of the Answer]")
            output = self.sabotage(original) or {"text": f"{code}({original})",
                                                 "choices": [f"{code}({c})" for c in choices],
                                                 "answer": f"{code}({answer})"}
            return json.dumps(output)
        code = NAMES[re.search(r"into (\w+)\.", prompt).group(1)]
        text = _between(prompt, "[The Start of the Text]", "[The End of the Text]")
        return json.dumps({"text": f"{code}({text})"})


def _config(tmp_path: Path, **extra) -> ExpandConfig:
    return ExpandConfig(seeds=[str(FRENCH), str(GERMAN)], proxy="openai:unused", per_seed=2,
                        cache=str(tmp_path / "cache.sqlite"), **extra)


def _run(tmp_path: Path, translator: ScriptedTranslator, out: str = "run", **extra):
    cache = RequestCache(tmp_path / "cache.sqlite")
    try:
        proxy = ProxyLLM.from_generator(translator, cache)
        return run_expand(_config(tmp_path, **extra), tmp_path / out, proxy)
    finally:
        cache.close()


def test_original_part_and_perturbation_translated_separately(tmp_path: Path) -> None:
    translator = ScriptedTranslator()
    metrics = _run(tmp_path, translator)
    french = sample_seeds(read_seed_file(FRENCH), 2, 0)
    german = sample_seeds(read_seed_file(GERMAN), 2, 0)
    raw = json.loads(FRENCH.read_text(encoding="utf-8"))
    # 2 seeds x 2 languages: each seed kept in its own language, translated into the other.
    assert metrics.made == {"fr": 4, "de": 4} and metrics.dropped == {} and metrics.pending == 0
    pairs = {p.pair_id: p for p in read_pair_file(tmp_path / "run" / "items.jsonl").pairs}
    assert len(pairs) == 8
    for seed in french:
        record = raw[int(seed.id.split(":")[1])]
        into_german = pairs[f"{seed.id}>de"]
        # The seed-language side's three parts, each translated on its own, joined by one space.
        parts = [f"DE({record[k].strip()})" for k in ("transpre", "transori", "transsuf") if record[k].strip()]
        assert into_german.target.question == " ".join(parts)
        assert into_german.target.choices == tuple(f"DE({c})" for c in record["transchoices"])
        assert into_german.english.question == record["question"]
        assert into_german.target.answer == record["choices"].index(record["answer"])
        # The seed pair itself is kept untranslated.
        assert pairs[f"{seed.id}>fr"].target.question == record["transquestion"]
        # The original part's prompt holds no inserted text, and the inserted text is asked alone.
        asked = [p for p in translator.prompts if record["transori"] in p]
        assert len(asked) == 1 and record["transpre"] not in asked[0] and "[The Start of the Choices]" in asked[0]
        assert any(f"[The Start of the Text]\n{record['transpre']}\n" in p for p in translator.prompts)
    german_raw = json.loads(GERMAN.read_text(encoding="utf-8"))
    inserted = sum(bool(rec[k].strip()) for seeds, rows in ((french, raw), (german, german_raw)) for s in seeds
                   for rec in [rows[int(s.id.split(":")[1])]] for k in ("transpre", "transsuf"))
    assert metrics.calls == 4 + inserted and metrics.seeds_sampled == {"fr": 2, "de": 2}
    items = [json.loads(line) for line in (tmp_path / "run" / "items.jsonl").read_text().splitlines()]
    assert {item["metadata"]["seed_lang"] for item in items if item["pair_id"].startswith("German:")} == {"de"}
    assert {p.pair_id.split(">")[0] for p in pairs.values()} == {s.id for s in french + german}

    # Resume: nothing is asked again, the same items come back.
    before = (tmp_path / "run" / "items.jsonl").read_text()
    again = ScriptedTranslator()
    assert _run(tmp_path, again).made == {"fr": 4, "de": 4} and again.prompts == []
    assert (tmp_path / "run" / "items.jsonl").read_text() == before


def test_english_side_can_be_the_source(tmp_path: Path) -> None:
    translator = ScriptedTranslator()
    _run(tmp_path, translator, expand_from="english")
    seed = sample_seeds(read_seed_file(FRENCH), 2, 0)[0]
    record = json.loads(FRENCH.read_text(encoding="utf-8"))[int(seed.id.split(":")[1])]
    pair = {p.pair_id: p for p in read_pair_file(tmp_path / "run" / "items.jsonl").pairs}[f"{seed.id}>de"]
    assert f"DE({record['oriquestion'].strip()})" in pair.target.question
    assert pair.target.choices == tuple(f"DE({c})" for c in record["choices"])


def test_validation_failures_are_retried_then_dropped_and_counted(tmp_path: Path) -> None:
    seeds = sample_seeds(read_seed_file(FRENCH), 2, 0)
    records = json.loads(FRENCH.read_text(encoding="utf-8"))
    bad_missing, bad_count = (records[int(s.id.split(":")[1])]["transori"] for s in seeds)

    def sabotage(original: str):
        if original == bad_missing:  # the answer is not among the translated choices
            return {"text": "q", "choices": ["a", "b", "c", "d"], "answer": "z"}
        if original == bad_count:  # a choice lost
            return {"text": "q", "choices": ["a", "b"], "answer": "a"}
        return None

    translator = ScriptedTranslator(sabotage)
    metrics = _run(tmp_path, translator)
    assert metrics.dropped == {"answer_missing": 1, "choice_count": 1}
    assert metrics.made == {"fr": 4, "de": 2}
    # Each failing output was asked max_attempts = 3 times before it was dropped.
    assert sum(bad_missing in p for p in translator.prompts) == 3
    assert sum(bad_count in p for p in translator.prompts) == 3
    assert len(read_pair_file(tmp_path / "run" / "items.jsonl").pairs) == 6


@pytest.mark.parametrize(("choices", "answer", "code"), [
    (["a", "b", "c", "d"], "a", "answer_index"),  # the answer moved to another index
    (["a", "b", "", "d"], "b", "empty_choice"),
    (["a", "b", "c", "b"], "b", "answer_index"),  # the answer also appears at another index
])
def test_the_schema_rejects_each_flaw(choices: list[str], answer: str, code: str) -> None:
    schema = translated_pair_schema(4, 1)
    with pytest.raises(ValueError, match=code):
        schema.model_validate({"text": "q", "choices": choices, "answer": answer})
    assert schema.model_validate({"text": "q", "choices": ["a", "b", "c", "d"], "answer": "b"}).answer == "b"


def test_transport_failures_are_pending_and_asked_again(tmp_path: Path) -> None:
    metrics = _run(tmp_path, ScriptedTranslator(fail=True))
    assert metrics.pending == 4 and metrics.made == {"fr": 2, "de": 2} and metrics.dropped == {}
    assert _run(tmp_path, ScriptedTranslator()).made == {"fr": 4, "de": 4}


def _short_seed_file(directory: Path, source: Path, index: int) -> Path:
    """A release file holding one real, unchanged record of `source` (a short one, so that the 270M model on
    2 shared cores translates it in reasonable time)."""
    directory.mkdir(exist_ok=True)
    path = directory / source.name
    path.write_text(json.dumps([json.loads(source.read_text(encoding="utf-8"))[index]], ensure_ascii=False))
    return path


@pytest.mark.nightly
def test_real_expand_against_the_llama_cpp_chat_server(tmp_path: Path, llama_chat_server: str) -> None:
    """One French seed pair into German and one German (with inserted text) into French through the real
    server: every translation ends made or dropped with a reason, none pending, and the items file reads
    back; a second run asks the server nothing."""
    seeds = [_short_seed_file(tmp_path / "seeds", FRENCH, 110), _short_seed_file(tmp_path / "seeds", GERMAN, 301)]
    config = ExpandConfig(seeds=[str(p) for p in seeds], proxy="openai:gemma", per_seed=1, base_url=llama_chat_server,
                          cache=str(tmp_path / "cache.sqlite"), max_attempts=2, max_tokens=160, timeout_s=120)
    metrics = run_expand(config, tmp_path / "run")
    print("real expand:", metrics.model_dump())
    for row in ShardedTable(tmp_path / "run" / "stages" / "expanded").read(EXPANDED_SCHEMA).to_pylist():
        print(row["pair_id"], row["error"] or row["question"])
        assert (row["error"] is None) == (row["question"] is not None)
    assert metrics.pending == 0
    assert metrics.made["fr"] >= 1 and metrics.made["de"] >= 1  # the seed pairs themselves
    assert metrics.made["fr"] + metrics.made["de"] + sum(metrics.dropped.values()) == 4
    # French: one structured output, no inserted text; German: one structured output and its before part.
    assert metrics.calls >= 3
    assert len(read_pair_file(tmp_path / "run" / "items.jsonl").pairs) == sum(metrics.made.values())
    # The command resumes the same run: nothing is asked again, and it writes the report.
    from typer.testing import CliRunner

    from crossknow.cli.app import app

    args = ["pitfalls", "expand", *(a for p in seeds for a in ("--seed-file", str(p))), "--proxy", "openai:gemma",
            "--per-seed", "1", "--base-url", llama_chat_server, "--cache", str(tmp_path / "cache.sqlite"),
            "--max-attempts", "2", "--max-tokens", "160", "--timeout", "120", "--out", str(tmp_path / "run")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "this run: 0 calls, 0 cached" in output
    drops = ", ".join(f"{reason} {n}" for reason, n in metrics.dropped.items()) or "none"
    assert f"expanded pairs per language: fr {metrics.made['fr']}, de {metrics.made['de']}; dropped: {drops}" in output
    assert (tmp_path / "run" / "report.html").exists()
