"""The whole pipeline on the mini corpus with a fake LLM: counts, outputs, resume, failures, config checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crossknow.data.formats import load_item_set
from crossknow.errors import CrossknowError

from .fake_llm import FakeLLM, default_answer

TABLE = {  # stage -> (en, ja) on the mini corpus with the fake LLM, which keeps everything it sees
    "documents": (4, 4), "split": (11, 11), "ner": (8, 7), "facts": (8, 7), "facts_dropped_sum": (0, 0),
    "triples": (8, 7), "cloze": (8, 7), "paraphrase": (8, 7), "distractors": (8, 7), "quality": (8, 7),
}


def counts(summary) -> dict[str, tuple[int, int]]:
    return {row.stage: (row.counts["en"], row.counts["ja"]) for row in summary.counts}


def outputs(out: Path) -> dict[str, str]:
    """Every output file's text: the sets, the pairing, invalid.jsonl."""
    files = sorted((out / "dataset").rglob("*.jsonl")) + [out / "invalid.jsonl"]
    return {str(path.relative_to(out)): path.read_text(encoding="utf-8") for path in files}


def committed_keys(out: Path) -> dict[str, list[str]]:
    keys = {}
    for manifest in sorted((out / "stages").glob("*/manifest.json")):
        shards = json.loads(manifest.read_text())["shards"]
        keys[manifest.parent.name] = [key for shard in shards for key in shard["keys"]]
    return keys


def test_full_run_writes_sets_pairing_and_the_stage_table(run_fake, tmp_path):
    summary, fake = run_fake()
    assert counts(summary) == TABLE
    out = tmp_path / "run"
    for lang, n in (("en", 8), ("ja", 7)):
        cloze = load_item_set(out / f"dataset/{lang}/memorization.jsonl")
        question = load_item_set(out / f"dataset/{lang}/generalization.jsonl")
        assert len(cloze.items) == len(question.items) == n and not cloze.invalid and not question.invalid
        assert {i.kind for i in cloze.items} == {"cloze"} and {i.kind for i in question.items} == {"question"}
        assert all(len(i.options) == 4 and i.lang == lang for i in cloze.items)
        assert [i.options for i in cloze.items] == [i.options for i in question.items]
    links = (out / "dataset/interlingual.jsonl").read_text().splitlines()
    assert len(links) == 15 and json.loads(links[0])["partner_doc_id"] == "chem-ja"
    saved = json.loads((out / "summary.json").read_text())
    assert saved["counts"][0]["label"] == "Document pairs" and saved["files"]["interlingual"]
    assert summary.length_ratio["en"] > 1 and summary.answer_longest["en"] == 0.0
    config = (out / "config.yaml").read_text()
    assert "seed: 0" in config and "threshold: 2.0" in config and "prompts_digest:" in config
    # 15 sentences; three detectors with one model id: the second and third ask what the first asked (cache
    # hits); then one call each for the regenerated triple, cloze, paraphrase and distractors, and two quality
    # judgements
    assert summary.calls_this_run == 15 + 15 + 15 + 15 + 15 + 2 * 15 and summary.cached_calls_this_run == 2 * 15
    assert summary.binary_confidence is True  # the fake gives no log-probabilities
    assert all(len(set(keys)) == len(keys) for keys in committed_keys(out).values())


def test_a_second_run_on_the_same_directory_calls_nothing_and_changes_nothing(run_fake, tmp_path):
    first, _ = run_fake()
    before = outputs(tmp_path / "run")
    again, fake = run_fake()
    assert fake.requests == [] and again.calls_this_run == again.cached_calls_this_run == 0
    assert outputs(tmp_path / "run") == before and counts(again) == counts(first)


class Interrupt(BaseException):
    """Stands in for a kill between two model calls."""


def test_interrupted_run_resumes_to_the_same_outputs(run_fake, tmp_path):
    from crossknow.store.spend_ledger import SpendLedger

    first, _ = run_fake(out=tmp_path / "reference", cache=str(tmp_path / "reference.sqlite"))
    reference = outputs(tmp_path / "reference")
    spent = SpendLedger(tmp_path / "reference").total()  # what `crossknow generate` prints as the whole run's
    assert spent.calls == first.calls_this_run and spent.tokens > 0
    for stop_after in (5, 20, 50, 80):  # in facts, triples, paraphrase, quality (calls, cache misses only)
        out, cache = tmp_path / f"cut-{stop_after}", str(tmp_path / f"cut-{stop_after}.sqlite")
        dying = FakeLLM()
        real = dying.generate

        def generate(requests, real=real, dying=dying, stop_after=stop_after):
            if len(dying.requests) >= stop_after:
                raise Interrupt
            return real(requests)

        dying.generate = generate
        with pytest.raises(Interrupt):
            run_fake(out=out, fake=dying, cache=cache, batch_size=4)
        assert not (out / "dataset").exists()
        partial = committed_keys(out)
        summary, fake = run_fake(out=out, cache=cache, batch_size=4)
        assert outputs(out) == reference
        resumed = committed_keys(out)
        assert all(resumed[stage][: len(keys)] == keys for stage, keys in partial.items())  # nothing redone
        assert all(len(set(keys)) == len(keys) for keys in resumed.values())  # nothing twice
        # the whole run's spend over both invocations is the uninterrupted run's, though the resume replayed
        # what the interrupted one had paid
        assert SpendLedger(out).total() == spent and summary.calls_this_run < spent.calls


def test_transport_failures_are_retried_by_the_next_run_and_nothing_is_written(run_fake, tmp_path):
    def facts(user, request):
        return None if "Insulin lowers" in user else default_answer("FactAnswer", user)

    flaky = FakeLLM(answers={"FactAnswer": facts})
    with pytest.raises(CrossknowError, match=r"1 inputs got no answer from the server \(facts 1\).*again"):
        run_fake(fake=flaky)
    out = tmp_path / "run"
    assert not (out / "dataset").exists() and not (out / "summary.json").exists()
    assert "med-en#0" not in committed_keys(out)["facts"]
    summary, fake = run_fake()
    assert counts(summary) == TABLE
    asked = [r.json_schema["title"] for r in fake.requests]
    assert asked.count("FactAnswer") == 1  # only the failed sentence was asked again (once: one model id)


def test_invalid_outputs_are_counted_and_listed(run_fake, tmp_path):
    broken = FakeLLM(answers={"DistractorAnswer": lambda user, request: '{"distractors": ["only one"]}'})
    summary, _ = run_fake(fake=broken, max_attempts=2)
    distractors = next(row for row in summary.counts if row.stage == "distractors")
    assert distractors.counts == {"en": 0, "ja": 0} and distractors.invalid == {"en": 8, "ja": 7}
    lines = [json.loads(line) for line in (tmp_path / "run/invalid.jsonl").read_text().splitlines()]
    assert len(lines) == 15 and lines[0]["stage"] == "distractors" and "at least 3" in lines[0]["error"]
    assert lines[0]["raw_text"] == ['{"distractors": ["only one"]}']


def test_sampling_is_seeded_and_recorded(run_fake, tmp_path):
    summary, _ = run_fake(sample=2, docs=3, seed=5)
    table = counts(summary)
    assert table["documents"] == (3, 3) and table["sample"] == (2, 2) and table["quality"] == (2, 2)
    again, _ = run_fake(out=tmp_path / "again", sample=2, docs=3, seed=5)
    assert outputs(tmp_path / "again") == outputs(tmp_path / "run")
    other, _ = run_fake(out=tmp_path / "other", sample=2, docs=3, seed=6)
    assert outputs(tmp_path / "other") != outputs(tmp_path / "run")


def test_the_fact_order_is_the_papers_by_default_reasoning_first_on_request_and_recorded(run_fake, tmp_path):
    def fact_schemas(fake: FakeLLM) -> set[tuple[str, tuple[str, ...]]]:
        return {(r.json_schema["title"], tuple(r.json_schema["anyOf"][0]["properties"])) for r in fake.requests
                if r.json_schema["title"].startswith("FactAnswer")}

    _, fake = run_fake(sample=1, docs=1)
    assert fact_schemas(fake) == {("FactAnswer", ("factuality", "triple", "reasoning"))}  # Appendix A.1's order
    assert "fact_order: paper" in (tmp_path / "run/config.yaml").read_text()
    _, fake = run_fake(out=tmp_path / "first", sample=1, docs=1, fact_order="reasoning_first")
    assert fact_schemas(fake) == {("FactAnswerReasoningFirst", ("reasoning", "factuality", "triple"))}
    assert "fact_order: reasoning_first" in (tmp_path / "first/config.yaml").read_text()
    # a prompt directory that replaces a language needs the facts prompt of the order asked for, not the other
    (tmp_path / "prompts").mkdir()
    en = (Path(__file__).parents[2] / "src/crossknow/adaxeval/prompts/en.yaml").read_text(encoding="utf-8")
    start, end = en.index("  facts_reasoning_first: |"), en.index("  triple: |")
    (tmp_path / "prompts" / "en.yaml").write_text(en[:start] + en[end:], encoding="utf-8")
    run_fake(out=tmp_path / "own", sample=1, docs=1, prompts=str(tmp_path / "prompts"))
    with pytest.raises(CrossknowError, match="no prompt for task 'facts_reasoning_first'"):
        run_fake(out=tmp_path / "own-first", sample=1, docs=1, prompts=str(tmp_path / "prompts"),
                 fact_order="reasoning_first")


def test_a_changed_config_is_refused_but_volatile_settings_may_change(run_fake):
    run_fake()
    with pytest.raises(CrossknowError, match=r"another config \(threshold: 2.0 -> 1.0\)"):
        run_fake(threshold=1.0)
    run_fake(batch_size=3, concurrency=1)


def test_problems_are_found_before_the_run_directory_is_made(run_fake, tmp_path):
    with pytest.raises(CrossknowError, match="no AdaXEval prompts for language 'de'"):
        run_fake(langs=["en", "de"])
    (tmp_path / "prompts").mkdir()
    en = (Path(__file__).parents[2] / "src/crossknow/adaxeval/prompts/en.yaml").read_text(encoding="utf-8")
    en = en.replace("  ja: Japanese", "  ja: Japanese\n  zh: Chinese")
    (tmp_path / "prompts" / "en.yaml").write_text(en, encoding="utf-8")
    (tmp_path / "prompts" / "zh.yaml").write_text(en.replace("language: en", "language: zh"), encoding="utf-8")
    with pytest.raises(CrossknowError, match="no document pairs in en and zh"):
        run_fake(langs=["en", "zh"], prompts=str(tmp_path / "prompts"))
    with pytest.raises(CrossknowError, match="--ner names languages not in --langs: fr"):
        run_fake(ner={"fr": "heuristic"})
    assert not (tmp_path / "run").exists()


def test_costs_follow_the_price_file_and_survive_resume(run_fake, tmp_path):
    prices = tmp_path / "prices.yaml"
    prices.write_text("fake-1: {prompt: 1.0, completion: 10.0}\n")
    summary, _ = run_fake(prices=str(prices))
    per_call = (100 * 1.0 + 20 * 10.0) / 1e6
    # every call behind the records: three votes per sentence count, cached or not
    assert summary.cost_usd == pytest.approx(per_call * (3 * 15 + 15 + 15 + 15 + 15 + 2 * 15))
    again, _ = run_fake(prices=str(prices))
    assert again.cost_usd == summary.cost_usd and again.calls_this_run == 0


@pytest.mark.slow
def test_generated_sets_are_scored_by_evaluate(run_fake, tmp_path, embedded_scorer):
    from crossknow.evaluation.pipeline import run_evaluate
    from crossknow.evaluation.records import EvaluateConfig

    run_fake(sample=1, docs=1)
    for name in ("memorization", "generalization"):
        data = tmp_path / f"run/dataset/en/{name}.jsonl"
        config = EvaluateConfig(model="default", data=str(data), batch_size=1, device="cpu")
        metrics = run_evaluate(config, tmp_path / f"eval-{name}", make_scorer=lambda spec, options: embedded_scorer)
        assert metrics.format == "adaxeval" and metrics.rule == "adaxeval" and metrics.n_invalid == 0
        kind = "cloze" if name == "memorization" else "question"
        assert metrics.n_items == {"all": 1, "lang=en": 1, f"kind={kind}": 1, f"lang=en,kind={kind}": 1}


def test_every_server_takes_the_key_of_api_key_env_unless_the_deprecated_option_says_otherwise(tmp_path):
    from crossknow.adaxeval.clients import Clients
    from crossknow.adaxeval.records import GenerateConfig

    seen = {}

    def make(spec, options):
        seen[spec] = (options.base_url, options.api_key_env)
        return FakeLLM()

    base = dict(corpus="c", langs=["en", "ja"], detectors=["openai:qwen@http://gpu1:8000/v1"], writer="openai:gpt-4.1",
                base_url="https://api.openai.com/v1")
    for server_key, deprecations in ((None, 0), ("VLLM_API_KEY", 1)):
        config = GenerateConfig(**base, api_key_env="RUN_KEY", server_api_key_env=server_key)
        clients = Clients(config, tmp_path, tmp_path / "cache.sqlite", make)
        clients.get("openai:qwen@http://gpu1:8000/v1")
        clients.get("openai:gpt-4.1")
        clients.close()
        assert seen == {"openai:qwen": ("http://gpu1:8000/v1", server_key or "RUN_KEY"),
                        "openai:gpt-4.1": ("https://api.openai.com/v1", "RUN_KEY")}
        assert len(config.deprecations()) == deprecations
    # each model is recorded under its spec with its server, with the prompt format its stages asked it in (the fake
    # names none: chat)
    assert json.loads((tmp_path / "models.json").read_text()) == {
        "openai:qwen@http://gpu1:8000/v1": {"model": "fake:fake-1", "prompt_format": "chat"},
        "openai:gpt-4.1@https://api.openai.com/v1": {"model": "fake:fake-1", "prompt_format": "chat"}}


def test_llm_ner_backend_and_its_failures_stop_before_sampling(run_fake, tmp_path):
    def entities(user, request):
        return None if "Insulin" in user else default_answer("EntityList", user)

    with pytest.raises(CrossknowError, match=r"\(ner 1\)"):
        run_fake(fake=FakeLLM(answers={"EntityList": entities}), ner={"en": "llm:hf:n"}, sample=2)
    assert not (tmp_path / "run/stages/facts").exists()
    summary, _ = run_fake(ner={"en": "llm:hf:n"}, sample=2)
    ner = next(row for row in summary.counts if row.stage == "ner")
    assert ner.counts == {"en": 5, "ja": 7}  # capitalised words the fake lists, >= 2 of them
    assert counts(summary)["sample"] == (2, 2)


def test_the_stage_table_counts_the_sentences_each_applied_rule_dropped(tmp_path, mini_corpus):
    from crossknow.adaxeval.pipeline import run_generate
    from crossknow.adaxeval.records import GenerateConfig

    def says_no(user, request):
        return json.dumps({"reasoning": "r", "factuality": "no", "triple": None})

    # three detectors with their own model ids; the third says no to everything, and there are no
    # log-probabilities: each sentence has 2 yes votes and a summed confidence of exactly 2
    fakes = {"hf:d1": FakeLLM("m1"), "hf:d2": FakeLLM("m2"), "hf:d3": FakeLLM("m3", {"FactAnswer": says_no}),
             "hf:w": FakeLLM("w")}
    tables = {}
    for rule in ("sum", "votes", "both"):
        config = GenerateConfig(corpus=str(mini_corpus), detectors=["hf:d1", "hf:d2", "hf:d3"], writer="hf:w",
                                cache=str(tmp_path / "cache.sqlite"), fact_rule=rule)
        summary = run_generate(config, tmp_path / rule, make_generator=lambda spec, options: fakes[spec])
        tables[rule] = counts(summary)
        assert summary.binary_confidence is True
    assert tables["sum"]["facts"] == (0, 0) and tables["sum"]["facts_dropped_sum"] == (8, 7)
    assert "facts_dropped_votes" not in tables["sum"]
    assert tables["votes"]["facts"] == tables["votes"]["quality"] == (8, 7)
    assert tables["votes"]["facts_dropped_votes"] == (0, 0) and "facts_dropped_sum" not in tables["votes"]
    assert tables["both"]["facts_dropped_sum"] == (8, 7) and tables["both"]["facts_dropped_votes"] == (0, 0)
    config = (tmp_path / "votes" / "config.yaml").read_text()
    assert "fact_rule: votes" in config and "threshold: 2.0" in config and "min_yes: 2" in config
