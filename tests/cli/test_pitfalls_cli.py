"""`crossknow pitfalls probe` through typer's CliRunner with scripted models (the proxy of the transformation
tests, a simulator fooled by hints), its resume and its errors; `crossknow pitfalls demo` end to end with the
embedded model (slow)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from crossknow.cli.app import app
from crossknow.generation.clients import ClientPool
from crossknow.pitfalls.probe import run as probe_run
from crossknow.pitfalls.proxy import ProxyLLM
from crossknow.pitfalls.simulate import SimAnswer
from crossknow.store.request_cache import RequestCache
from tests.cli.in_process import user_error
from tests.pitfalls.test_judge_similarity import ProxyThatJudges


class FooledByHints:
    """Right in English except on question q1; in French wrong exactly when the question holds a 'hint'."""

    def __init__(self, name: str):
        self.name = name
        self.asked = 0

    def answer(self, questions, resimulation=0):
        self.asked += len(questions)
        wrong = [(q.lang == "fr" and "hint" in q.question) or q.question == "q1" for q in questions]
        return [SimAnswer((q.answer + w) % len(q.choices), None, None) for q, w in zip(questions, wrong, strict=True)]


@pytest.fixture()
def scripted(monkeypatch, tmp_path):
    """The probe command's models replaced by scripted ones; returns (proxy generator, simulators)."""
    generator = ProxyThatJudges()  # also the LLM judge of the semantic checks, the probe's default
    simulators = [FooledByHints("sim-a"), FooledByHints("sim-b")]
    monkeypatch.setattr(probe_run, "build_proxy",
                        lambda config, pool: ProxyLLM.from_generator(generator, pool.request_cache()))
    monkeypatch.setattr(probe_run, "build_simulators", lambda config, pool: simulators)
    return generator, simulators


def write_sources(path: Path, count: int) -> Path:
    records = [{"question": f"q{i}", "choices": ["a", "b", "c", "d"], "answer": "a"} for i in range(count)]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def probe_args(tmp_path: Path, *sources: Path, recipe: str = "dp", n: int = 4) -> list[str]:
    args = ["pitfalls", "probe", "--recipe", recipe, "--n", str(n), "--lang", "fr",
            "--proxy", "openai:x@http://127.0.0.1:9/v1", "--simulator", "openai:a", "--simulator", "openai:b",
            "--base-url", "http://127.0.0.1:8/v1", "--cache", str(tmp_path / "requests.sqlite"),
            "--out", str(tmp_path / "run")]
    for source in sources:
        args += ["--sources", str(source)]
    return args


def test_probe_prefilters_searches_reports_and_resumes(scripted, tmp_path):
    generator, simulators = scripted
    first, second = write_sources(tmp_path / "one.json", 3), write_sources(tmp_path / "two.json", 3)
    result = CliRunner().invoke(app, probe_args(tmp_path, first, second, n=4))
    assert result.exit_code == 0, result.output
    out = tmp_path / "run"
    sample = json.loads((out / "sources.json").read_text())
    # 2 drawn from each file; q1 (wrong in English for both simulators) is dropped wherever it was drawn
    assert [f["drawn"] for f in sample["files"]] == [2, 2]
    expected_dropped = [i for i in sample["kept_ids"] + list(sample["dropped"]) if i.endswith(":1")]
    assert sample["dropped_wrong"] == len(expected_dropped) and sample["kept"] == 4 - len(expected_dropped)
    account = json.loads((out / "account.json").read_text())
    # dp: a kept root holds no hint (V = 1 - 1 = 0) and neither does its one rewrite ("Some background. q An
    # example."), so nothing qualifies
    assert account["sources"] == sample["kept"] and account["candidates"] == 0 and account["per_found_pair"] is None
    assert f"Conversion rate 0.0% (0 of {sample['kept']}" in result.output
    report = (out / "report.html").read_text()
    assert "Conversion rate 0.0%" in report and "table-sources" in report
    asked, calls = simulators[0].asked, len(generator.requests)
    again = CliRunner().invoke(app, probe_args(tmp_path, first, second, n=4))
    assert again.exit_code == 0, again.output
    # resumed: the draw and the prefilter come from sources.json, the batches are done: nothing is asked
    assert simulators[0].asked == asked and len(generator.requests) == calls
    said = " ".join(again.output.split())  # the console wraps long lines
    assert f"whole run: proxy {calls} calls" in said and "0 pairs found by this invocation" in said


def test_probe_with_the_paper_recipe_finds_the_hinted_pairs_and_leads_with_the_rate(scripted, tmp_path):
    source = write_sources(tmp_path / "s.json", 3)
    result = CliRunner().invoke(app, [*probe_args(tmp_path, source, recipe="paper", n=3), "--width", "3",
                                      "--depth", "1", "--extended-depth", "1"])
    assert result.exit_code == 0, result.output
    account = json.loads((tmp_path / "run" / "account.json").read_text())
    # q0 and q2 kept; each of their 3 hinted children has V = 1 >= 0.8, capped at k = 3 per question
    assert (account["sources"], account["converted"], account["candidates"]) == (2, 2, 6)
    assert "Conversion rate 100.0% (2 of 2" in result.output
    config = (tmp_path / "run" / "config.yaml").read_text()
    assert "width: 3" in config and "depth: 1" in config  # the overrides are recorded
    assert "semantic_check: llm" in config and "judge: scripted:proxy" in config  # the proxy judged
    per, search = account["per_found_pair"], account["per_found_pair_search"]
    assert search["calls"] == pytest.approx((account["proxy"]["calls"] + account["simulation"]["calls"]) / 6)
    # the headline includes the English prefilter: 3 questions asked of 2 simulators
    assert account["prefilter"]["calls"] == 6 and per["calls"] == pytest.approx(search["calls"] + 6 / 6)
    report = (tmp_path / "run" / "report.html").read_text()
    assert report.index("Conversion rate 100.0%") < report.index("table-spend") < report.index("table-pairs")
    # every found pair holds a hint, so the scripted classifier puts all 6 in Arts & Literature
    categories = [json.loads(line) for line in (tmp_path / "run" / "categories.jsonl").read_text().splitlines()]
    assert len(categories) == 6 and {c["category"] for c in categories} == {"Arts & Literature"}
    items = [json.loads(line) for line in (tmp_path / "run" / "candidate_items.jsonl").read_text().splitlines()]
    assert len(items) == 12 and {i["metadata"]["category"] for i in items} == {"Arts & Literature"}
    assert "table-categories" in report


def test_a_source_file_of_the_wrong_shape_is_one_error_naming_file_line_and_field(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"question": "q", "choices": ["a", "b"], "answer": "a"}, {"question": "q"}]))
    args = ["pitfalls", "probe", "--recipe", "np", "--sources", str(bad), "--n", "2", "--proxy", "default",
            "--simulator", "default", "--out", str(tmp_path / "run")]
    stderr = user_error(monkeypatch, capsys, tmp_path, *args)
    assert f"{bad}, line 2: field 'choices'" in stderr


def test_base_url_is_given_once_or_deprecated_once_per_simulator(tmp_path, monkeypatch, capsys):
    source = write_sources(tmp_path / "s.json", 2)
    args = ["pitfalls", "probe", "--recipe", "np", "--sources", str(source), "--n", "2", "--proxy", "default",
            "--simulator", "openai:a", "--simulator", "openai:b", "--simulator", "openai:c",
            "--base-url", "http://127.0.0.1:9/v1", "--base-url", "http://127.0.0.1:8/v1",
            "--cache", str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "run")]
    stderr = user_error(monkeypatch, capsys, tmp_path, *args)
    assert "--base-url: give it once (the server of the specs that name none), not 2 times" in stderr


@pytest.fixture()
def recorded(monkeypatch, tmp_path):
    """The probe's own builders over a pool whose factories record (spec, server, key variable) and hand out
    scripted models (the simulators built are recorded, then replaced by `FooledByHints`)."""
    seen: dict[str, list] = {"generators": [], "scorers": []}

    def generator(spec, options):
        seen["generators"].append((spec, options.base_url, options.api_key_env))
        return ProxyThatJudges()

    def scorer(spec, options):
        seen["scorers"].append((spec, options.base_url, options.api_key_env))
        return SimpleNamespace(name="stand-in", model_id=spec)  # replaced by FooledByHints before it scores

    build_simulators = probe_run.build_simulators
    monkeypatch.setattr(probe_run, "probe_pool", lambda config, run_dir: ClientPool(
        cache_path=tmp_path / "requests.sqlite", run_dir=run_dir, make_generator=generator, make_scorer=scorer))
    monkeypatch.setattr(probe_run, "build_simulators", lambda config, pool: (
        build_simulators(config, pool), [FooledByHints("sim-a"), FooledByHints("sim-b")])[1])
    return seen


def test_the_old_server_options_still_work_once_more_and_say_the_new_way(recorded, tmp_path):
    source = write_sources(tmp_path / "s.json", 2)
    old = ["pitfalls", "probe", "--recipe", "dp", "--n", "2", "--lang", "fr", "--sources", str(source),
           "--proxy", "openai:x", "--proxy-base-url", "http://127.0.0.1:9/v1", "--proxy-api-key-env", "PROXY_KEY",
           "--simulator", "openai:a", "--simulator", "openai:b",
           "--base-url", "http://127.0.0.1:7/v1", "--base-url", "http://127.0.0.1:8/v1",
           "--out", str(tmp_path / "old")]
    result = CliRunner().invoke(app, old)
    assert result.exit_code == 0, result.output
    said = " ".join(result.stderr.split())
    soon = "is deprecated and will be removed in the next release"
    assert said.count(soon) == 2
    assert f"--proxy-base-url {soon}: write the proxy's server in its spec, --proxy openai:x@http://127.0.0.1:9/v1" \
        in said
    assert (f"--base-url once per --simulator {soon}: write each simulator's server in its spec, --simulator "
            "openai:a@http://127.0.0.1:7/v1 --simulator openai:b@http://127.0.0.1:8/v1") in said
    # the values were used: the proxy on its server with its key, each simulator on its own server
    assert recorded["generators"] == [("openai:x", "http://127.0.0.1:9/v1", "PROXY_KEY")]
    assert recorded["scorers"] == [("openai:a", "http://127.0.0.1:7/v1", "OPENAI_API_KEY"),
                                   ("openai:b", "http://127.0.0.1:8/v1", "OPENAI_API_KEY")]


def test_the_new_way_names_each_server_in_its_spec_and_says_nothing_of_deprecation(recorded, tmp_path):
    source = write_sources(tmp_path / "s.json", 2)
    new = ["pitfalls", "probe", "--recipe", "dp", "--n", "2", "--lang", "fr", "--sources", str(source),
           "--proxy", "openai:x", "--proxy-api-key-env", "PROXY_KEY", "--api-key-env", "RUN_KEY",
           "--simulator", "openai:a@http://127.0.0.1:7/v1", "--simulator", "openai:b",
           "--base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "new")]
    result = CliRunner().invoke(app, new)
    assert result.exit_code == 0, result.output
    assert "deprecated" not in result.output
    # --base-url is the default of the proxy and of every simulator whose spec names no server
    assert recorded["generators"] == [("openai:x", "http://127.0.0.1:9/v1", "PROXY_KEY")]
    assert recorded["scorers"] == [("openai:a", "http://127.0.0.1:7/v1", "RUN_KEY"),
                                   ("openai:b", "http://127.0.0.1:9/v1", "RUN_KEY")]


@pytest.mark.nightly
@pytest.mark.timeout(1800)
def test_the_demo_runs_three_recipes_with_local_models_and_resumes_for_free(tmp_path):
    out = tmp_path / "demo"
    args = ["pitfalls", "demo", "--out", str(out), "--proxy-max-tokens", "24"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "demo.json").read_text())
    for name in ("np", "dp", "beam"):
        account = summary["runs"][name]["account"]
        lines = (out / name / "candidates.jsonl").read_text().splitlines() \
            if (out / name / "candidates.jsonl").exists() else []
        # the conversion rate from the candidate list itself: distinct questions with a pair / questions probed
        converted = len({json.loads(line)["source_id"] for line in lines})
        assert account["converted"] == converted and account["candidates"] == len(lines)
        assert account["conversion_rate"] == pytest.approx(converted / account["sources"])
        assert f"{converted / account['sources']:.1%}" in result.output
        assert (out / name / "report.html").exists()
    assert summary["runs"]["beam"]["account"]["sources"] == 5  # the reduced beam probes every kept question
    # the embedded base model plays every part: the console and the side-by-side report say so first
    assert "These numbers check the machinery, not a model's weakness" in result.output
    assert "table-recipes" in (out / "report.html").read_text(encoding="utf-8")
    assert summary["runs"]["np"]["account"]["proxy"]["calls"] >= 1  # the translations were asked of the model
    with RequestCache(out / "requests.sqlite") as cache:
        stored = len(cache)
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    rerun = json.loads((out / "demo.json").read_text())["runs"]
    with RequestCache(out / "requests.sqlite") as cache:
        assert len(cache) == stored  # no new request was made: every batch was finished
    for name in ("np", "dp", "beam"):  # the accounts cover the whole run: read back unchanged
        first, second = summary["runs"][name]["account"], rerun[name]["account"]
        assert second["found_now"] == 0 and (second["proxy"], second["simulation"]) == (first["proxy"],
                                                                                         first["simulation"])
