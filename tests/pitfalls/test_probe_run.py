"""`probe_from_config` and `crossknow pitfalls probe` (probe/run.py): the English prefilter's help and its spend in
sources.json, the account and the cost per found pair; and the whole run's spend of a probe killed with -9 and
resumed, against an uninterrupted run, through a scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from crossknow.generation.clients import ClientPool, Role
from crossknow.generation.pricing import ModelPrice, PriceTable
from crossknow.pitfalls.probe.run import PitfallsProbeConfig, probe_from_config
from crossknow.pitfalls.proxy import ProxyLLM
from crossknow.pitfalls.simulate import (
    SIMULATION_MAX_TOKENS,
    SIMULATION_TEMPERATURE,
    GenerativeSimulator,
    MCQuestion,
    answer_prompt,
)
from crossknow.report.pitfalls_probe_report import probe_lead
from crossknow.store.request_cache import RequestCache

from ..conftest import SHARED_PAPERS
from ..processes import run_until_then_kill
from .scripted_server import SIMULATORS, ScriptedGenerator, ScriptedServer, reply, write_sources

PAPER = SHARED_PAPERS / "cross-lingual-pitfalls.txt"
PRICES = {"proxy": {"prompt": 1.0, "completion": 2.0}, "sim-a": {"prompt": 0.5, "completion": 4.0},
          "sim-b": {"prompt": 3.0, "completion": 1.0}}
"""USD per million tokens of the scripted models, so that every part of a run costs something."""


def test_the_prefilter_help_claims_nothing_the_paper_does_not_say():
    help_text = PitfallsProbeConfig.model_fields["prefilter"].description
    assert "filter" not in PAPER.read_text(encoding="utf-8").lower()  # the paper says nothing of a prefilter
    assert "samples its questions without" not in help_text
    assert "crossknow's choice" in help_text and "the paper describes no filter" in help_text
    assert "released run.py filters the same way" in help_text  # its main() skips rate_ori != 1.0


def _config(tmp_path: Path, sources: Path) -> PitfallsProbeConfig:
    return PitfallsProbeConfig(
        recipe="paper", sources=[str(sources)], n=3, lang="fr", proxy="proxy", simulators=list(SIMULATORS),
        answering="generative", categorize=False, width=3, depth=1, extended_depth=1,
        cache=str(tmp_path / "requests.sqlite"))


def _scripted_models(cache: RequestCache) -> tuple[ProxyLLM, list[GenerativeSimulator]]:
    prices = PriceTable({name: ModelPrice(**price) for name, price in PRICES.items()})
    proxy = ProxyLLM.from_generator(ScriptedGenerator("proxy"), cache, prices=prices)
    pool = ClientPool.over(cache, prices)
    role = Role(temperature=SIMULATION_TEMPERATURE, max_tokens=SIMULATION_MAX_TOKENS)
    for name in SIMULATORS:
        pool.adopt(name, ScriptedGenerator(name))
    return proxy, [GenerativeSimulator.from_pool(name, pool, name, role) for name in SIMULATORS]


def test_the_prefilter_spend_is_recorded_and_counted_in_the_cost_per_found_pair(tmp_path):
    sources = write_sources(tmp_path / "s.json", 3)
    out = tmp_path / "run"
    with RequestCache(tmp_path / "requests.sqlite") as cache:
        proxy, simulators = _scripted_models(cache)
        account, sample = probe_from_config(_config(tmp_path, sources), out, proxy=proxy, simulators=simulators,
                                            answering="generative")
    # the prefilter: 3 questions drawn, each asked in English of both simulators (q1 is answered wrong)
    assert (sample.drawn, sample.kept, sample.dropped_wrong) == (3, 2, 1)
    usages = [(name, reply(name, answer_prompt(MCQuestion(f"q{i}", ("a", "b", "c", "d"), 0, "en")))[1])
              for name in SIMULATORS for i in range(3)]
    prompt, completion = sum(u.prompt_tokens for _, u in usages), sum(u.completion_tokens for _, u in usages)
    cost = sum(PriceTable({n: ModelPrice(**p) for n, p in PRICES.items()}).cost("scripted", name, usage)
               for name, usage in usages)
    recorded = json.loads((out / "sources.json").read_text())["spend"]
    assert (recorded["calls"], recorded["prompt_tokens"], recorded["completion_tokens"]) == (6, prompt, completion)
    assert recorded["cost_usd"] == pytest.approx(cost) and cost > 0
    saved = json.loads((out / "account.json").read_text())
    assert saved["prefilter"] == recorded
    # the headline cost per found pair includes the prefilter; the search alone is given beside it
    parts = [account.prefilter, account.proxy, account.simulation]
    assert account.candidates == 6  # q0 and q2: 3 hinted children each, V = 1
    for field in ("calls", "prompt_tokens", "completion_tokens", "cost_usd"):
        whole = sum(getattr(part, field) for part in parts)
        assert getattr(account.per_found_pair, field) == pytest.approx(whole / 6)
        search = whole - getattr(account.prefilter, field)
        assert getattr(account.per_found_pair_search, field) == pytest.approx(search / 6)
    assert "Per found pair (the English prefilter included" in probe_lead(account)
    # resumed with nothing left to do: the prefilter is not asked again, its spend read back from sources.json
    with RequestCache(tmp_path / "requests.sqlite") as cache:
        proxy, simulators = _scripted_models(cache)
        again, _ = probe_from_config(_config(tmp_path, sources), out, proxy=proxy, simulators=simulators,
                                     answering="generative")
        assert all(s.client.meter.calls == s.client.meter.cached_calls == 0 for s in simulators)
    assert again.prefilter == account.prefilter and again.per_found_pair == account.per_found_pair
    assert again.this_invocation.calls == 0  # it sent nothing


def _probe_command(server: ScriptedServer, tmp_path: Path, name: str) -> list[str]:
    """`crossknow pitfalls probe` with the paper's recipe reduced (batches of 2, w = 3, d1 = d2 = 1) on 6 questions,
    every model on the scripted server, the run `name` with its own request cache."""
    url = server.base_url
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(PRICES))
    return [sys.executable, "-m", "crossknow", "pitfalls", "probe", "--recipe", "paper", "--n", "6", "--lang", "fr",
            "--initial-batch", "2", "--width", "3", "--depth", "1", "--extended-depth", "1",
            "--proxy", f"openai:proxy@{url}", "--simulator", f"openai:sim-a@{url}",
            "--simulator", f"openai:sim-b@{url}", "--answering", "generative", "--no-categorize",
            "--concurrency", "1", "--prices", str(prices), "--sources", str(tmp_path / "s.json"),
            "--cache", str(tmp_path / f"{name}.sqlite"), "--out", str(tmp_path / name)]


def _run(command: list[str], cwd: Path) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    return " ".join(done.stdout.split())


SPEND = ("calls", "prompt_tokens", "completion_tokens", "cost_usd")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_probe_killed_with_sigkill_and_resumed_reports_the_spend_of_an_uninterrupted_run(tmp_path, monkeypatch):
    write_sources(tmp_path / "s.json", 6)
    monkeypatch.setenv("OPENAI_API_KEY", "scripted")
    with ScriptedServer(delay_s=0.01) as server:
        _run(_probe_command(server, tmp_path, "whole"), tmp_path)  # uninterrupted, with a fresh cache of its own
        sent, server.requests = server.requests, 0
        killed = tmp_path / "killed"
        # killed mid-run, after about half the requests (a batch or two finished, one paid for in part)
        run_until_then_kill(_probe_command(server, tmp_path, "killed"), tmp_path, tmp_path / "killed.log",
                            lambda: server.requests >= sent // 2, 180, "half the requests")
        before_resume = server.requests
        said = _run(_probe_command(server, tmp_path, "killed"), tmp_path)
    whole = json.loads((tmp_path / "whole" / "account.json").read_text())
    resumed = json.loads((killed / "account.json").read_text())
    print(f"requests: uninterrupted {sent}; killed {before_resume}, then {server.requests - before_resume} "
          f"more\nuninterrupted: {json.dumps(whole)}\nresumed: {json.dumps(resumed)}")
    assert server.requests - before_resume < sent  # the resume replayed what the killed invocation had paid
    assert resumed["candidates"] == whole["candidates"] > 0
    for part in ("proxy", "simulation", "per_found_pair", "prefilter", "per_found_pair_search"):
        for field in SPEND:
            assert resumed[part][field] == pytest.approx(whole[part][field]), (part, field)
    assert resumed["this_invocation"]["calls"] < whole["this_invocation"]["calls"]
    assert f"whole run: proxy {whole['proxy']['calls']:.0f} calls" in said
    assert f"this invocation sent {resumed['this_invocation']['calls']:.0f} requests" in said
