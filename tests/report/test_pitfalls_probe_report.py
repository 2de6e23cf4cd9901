"""The Pitfalls probe reports: the small-base-model note at the top, and np, dp and beam side by side (conversion
rate, pairs beyond depth 0, calls and seconds per found pair) from known accounts, the numbers worked out by hand."""

from __future__ import annotations

import json
import re

import yaml

from crossknow.pitfalls.probe.probe import ProbeAccount, Spend
from crossknow.report.pitfalls_probe_report import (
    RECIPE_HEADERS,
    base_model_note,
    write_probe_report,
    write_recipes_report,
)

from .parse import parse_report

BASE_MODELS = {"proxy": "default:gemma-3-270m", "judge": None, "simulators": ["default/loss-sum"],
               "prompt_formats": {"proxy": "completion", "judge": None, "simulators": {"default/loss-sum": "loss"}}}
CHAT_MODELS = {"proxy": "openai:gpt-4o", "judge": "openai:gpt-4o", "simulators": ["openai:qwen"],
               "prompt_formats": {"proxy": "chat", "judge": "chat", "simulators": {"openai:qwen": "chat"}}}


def _spend(calls: float, seconds: float) -> Spend:
    return Spend(calls=calls, prompt_tokens=0, completion_tokens=0, seconds=seconds, cost_usd=0)


def _account(recipe: str, sources: int, converted: int, at_0: int, pairs: int, beyond: int, proxy: Spend,
             simulation: Spend) -> ProbeAccount:
    """An account whose per-found-pair spend is (proxy + simulation) / pairs, as `run_probe` writes it."""
    per = _spend((proxy.calls + simulation.calls) / pairs, (proxy.seconds + simulation.seconds) / pairs) \
        if pairs else None
    return ProbeAccount(
        recipe=recipe, lang="ja", sources=sources, batches=1, converted=converted,
        conversion_rate=converted / sources, converted_at_depth_0=at_0, converted_beyond_depth_0=converted - at_0,
        conversion_rate_at_depth_0=at_0 / sources, conversion_rate_beyond_depth_0=(converted - at_0) / sources,
        candidates=pairs, pairs_at_depth_0=pairs - beyond, pairs_beyond_depth_0=beyond, found_now=pairs,
        proxy=proxy, simulation=simulation, seconds=proxy.seconds + simulation.seconds, per_found_pair=per)


def _run(path, account: ProbeAccount, config: dict):
    path.mkdir(parents=True)
    (path / "account.json").write_text(json.dumps(account.model_dump(mode="json")), encoding="utf-8")
    (path / "config.yaml").write_text(yaml.safe_dump({"recipe": account.recipe, **config}), encoding="utf-8")
    return path


def _lead(html: str) -> str:
    return re.search(r'<p class="lead">(.*?)</p>', html, re.S).group(1)


def test_np_dp_and_beam_side_by_side_with_the_base_model_note_first(tmp_path):
    runs = {
        # np: 2 of 6 converted at depth 0; 20 proxy + 12 simulator calls, 4.0 + 2.5 s, over 2 pairs
        "np": _run(tmp_path / "np", _account("np", 6, 2, 2, 2, 0, _spend(20, 4.0), _spend(12, 2.5)), BASE_MODELS),
        # dp: 3 of 6, one of them beyond depth 0 (1 of its 3 pairs); 30 + 18 calls, 9.0 + 3.0 s, over 3 pairs
        "dp": _run(tmp_path / "dp", _account("dp", 6, 3, 2, 3, 1, _spend(30, 9.0), _spend(18, 3.0)), BASE_MODELS),
        # beam: 1 source, nothing found
        "beam": _run(tmp_path / "beam", _account("paper", 1, 0, 0, 0, 0, _spend(7, 1.0), _spend(5, 0.5)),
                     BASE_MODELS),
    }
    html = write_recipes_report(tmp_path, runs).read_text(encoding="utf-8")
    assert _lead(html).startswith("These numbers check the machinery, not a model&#x27;s weakness: small base "
                                  "models play a part here (proxy default:gemma-3-270m in completion form; "
                                  "simulator default/loss-sum)")
    table = parse_report(html).tables["table-recipes"]
    assert table.headers == RECIPE_HEADERS
    assert table.rows == [
        # run, recipe, sources, converted, 2/6, pairs, beyond depth 0, converted beyond, 32/2 calls, 6.5/2 s
        ["np", "np", "6", "2", "33.3%", "2", "0", "0", "16.0", "3.25"],
        # 3/6; 48/3 calls; 12.0/3 s
        ["dp", "dp", "6", "3", "50.0%", "3", "1", "1", "16.0", "4.00"],
        ["beam", "paper", "1", "0", "0.0%", "0", "0", "0", "—", "—"],
    ]
    # each run's own report: the note first, then its row of the same table
    single = write_probe_report(runs["dp"]).read_text(encoding="utf-8")
    assert _lead(single).startswith("These numbers check the machinery") and "Conversion rate 50.0%" in _lead(single)
    assert parse_report(single).tables["table-recipes"].rows == [["dp", "dp", "6", "3", "50.0%", "3", "1", "1",
                                                                  "16.0", "4.00"]]


def test_no_note_for_chat_models_and_a_note_for_any_completion_model_or_the_embedded_default():
    assert base_model_note({"run": CHAT_MODELS}) is None
    judge_in_completion = {**CHAT_MODELS, "prompt_formats": {**CHAT_MODELS["prompt_formats"], "judge": "completion"}}
    assert "judge openai:gpt-4o in completion form" in base_model_note({"run": judge_in_completion})
    assert "(simulator default)" in base_model_note({"run": {**CHAT_MODELS, "simulators": ["default"]}})
    # one such run among several is enough
    assert base_model_note({"a": CHAT_MODELS, "b": BASE_MODELS}) is not None


def test_a_chat_run_report_opens_with_its_conversion_rate(tmp_path):
    run = _run(tmp_path / "np", _account("np", 4, 1, 1, 1, 0, _spend(8, 2.0), _spend(4, 1.0)), CHAT_MODELS)
    assert _lead(write_probe_report(run).read_text(encoding="utf-8")).startswith("Conversion rate 25.0%")
