"""report.html of `crossknow pitfalls probe`: the conversion rate and the spend per found pair first (the paper's
Table 1 and Fig. 4), then the pairs, the draw, the prefilter and the settings; and several runs side by side
(`write_recipes_report`: the demo's np, dp and beam). A run with small base models says first that its numbers
check the machinery, not a model's weakness (`base_model_note`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from crossknow.pitfalls.categories import CategoryLog, category_table
from crossknow.pitfalls.probe.probe import ProbeAccount, probe_candidates
from crossknow.pitfalls.probe.sources import SourceSample
from crossknow.report.html import meta_table, paragraph, report_page, table
from crossknow.report.pitfalls_categories_report import counts_html
from crossknow.store.atomic import atomic_write_text

SPEND_FIELDS = ("calls", "prompt_tokens", "completion_tokens", "seconds", "cost_usd")
"""The columns of the spend table, as named in account.json."""


def probe_lead(account: ProbeAccount) -> str:
    """The report's first sentence: the conversion rate, split into depth 0 (the unperturbed pairs, as NP finds
    them) and beyond, and what one found pair cost, saying whether that includes the English prefilter."""
    rate = (f"Conversion rate {account.conversion_rate:.1%} ({account.converted} of {account.sources} English "
            f"questions gave at least one pair that models answer in English but not in {account.lang}; recipe "
            f"{account.recipe}, {account.candidates} pairs in the list). Found at depth 0 (the unperturbed "
            f"translation, as NP finds it): {account.pairs_at_depth_0} pairs, {account.converted_at_depth_0} "
            f"questions ({account.conversion_rate_at_depth_0:.1%}); beyond depth 0: {account.pairs_beyond_depth_0} "
            f"pairs, {account.converted_beyond_depth_0} more questions ({account.conversion_rate_beyond_depth_0:.1%}).")
    per = account.per_found_pair
    if per is None:
        return rate + " The candidate list is empty, so there is no spend per found pair."
    search, scope = account.per_found_pair_search, "no English prefilter ran"
    if account.prefilter is not None and account.prefilter.calls > 0 and search is not None:
        scope = f"the English prefilter included; the search alone: {search.calls:.1f} calls, ${search.cost_usd:.4f}"
    return rate + (f" Per found pair ({scope}): {per.calls:.1f} model calls, "
                   f"{per.prompt_tokens + per.completion_tokens:,.0f} tokens, {per.seconds:.1f} s, "
                   f"${per.cost_usd:.4f}.")


def base_model_note(configs: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The warning a report opens with when any run (config.yaml by run name) has a small base model as proxy,
    judge or simulator: the embedded `default` (by its spec or backend name) or a model asked in completion
    form. None when no run has one."""
    models: dict[str, None] = {}
    for config in configs.values():
        formats = config.get("prompt_formats") or {}
        parts = [(part, config.get(part), formats.get(part)) for part in ("proxy", "judge")]
        simulator_formats = formats.get("simulators") or {}
        parts += [("simulator", name, simulator_formats.get(name))
                  for name in dict.fromkeys([*(config.get("simulators") or []), *simulator_formats])]
        for part, model, form in parts:
            if form == "completion" or _is_embedded(model):
                models[f"{part} {model}{' in completion form' if form == 'completion' else ''}"] = None
    if not models:
        return None
    return (f"These numbers check the machinery, not a model's weakness: small base models play a part here "
            f"({'; '.join(models)}), too weak as proxy, judge or simulator to measure real cross-lingual pitfalls.")


def _is_embedded(model: object) -> bool:
    """Whether a recorded model (a spec, a simulator name or backend:model_id) is the embedded `default`."""
    return isinstance(model, str) and (model == "default" or model.startswith(("default:", "default/", "default#")))


RECIPE_HEADERS = ["run", "recipe", "sources", "converted", "conversion rate", "pairs", "pairs beyond depth 0",
                  "converted beyond depth 0", "calls / found pair", "seconds / found pair"]
"""The columns of the recipes table: conversion, the pairs found by perturbation, and the spend per found pair
(calls and seconds of the proxy and the simulators, `ProbeAccount.per_found_pair`)."""


def recipe_table(accounts: Mapping[str, ProbeAccount]) -> str:
    """One row per run (by name): its conversion rate, pairs beyond depth 0, and calls and seconds per found
    pair side by side ('—' for a run that found none)."""
    rows = []
    for name, a in accounts.items():
        per = a.per_found_pair
        rows.append([name, a.recipe, a.sources, a.converted, f"{a.conversion_rate:.1%}", a.candidates,
                     a.pairs_beyond_depth_0, a.converted_beyond_depth_0, f"{per.calls:.1f}" if per else None,
                     f"{per.seconds:.2f}" if per else None])
    return table("table-recipes", "Conversion and spend per found pair, by run", RECIPE_HEADERS, rows,
                 text_columns=2)


def write_recipes_report(out: str | Path, runs: Mapping[str, str | Path]) -> Path:
    """Write `out`/report.html: the probe runs `runs` (name -> run directory, each with account.json and
    config.yaml) side by side in `recipe_table`, after `base_model_note` where it applies."""
    accounts = {name: ProbeAccount.model_validate_json((Path(run) / "account.json").read_text(encoding="utf-8"))
                for name, run in runs.items()}
    note = base_model_note({name: run_config(Path(run)) for name, run in runs.items()})
    lead = " ".join(f"{name}: {a.conversion_rate:.1%} converted ({a.converted} of {a.sources}), "
                    f"{a.pairs_beyond_depth_0} of {a.candidates} pairs beyond depth 0." for name, a in accounts.items())
    html = report_page("Cross-Lingual Pitfalls probes side by side", f"{note} {lead}" if note else lead,
                       [recipe_table(accounts)],
                       [("Runs", [meta_table({name: str(run) for name, run in runs.items()}, "table-runs", "Runs")])])
    return atomic_write_text(Path(out) / "report.html", html)


def run_config(run: Path) -> dict[str, Any]:
    """The config.yaml of run directory `run` ({} when absent)."""
    path = run / "config.yaml"
    return (yaml.safe_load(path.read_text(encoding="utf-8")) or {}) if path.exists() else {}


def _spend_rows(account: ProbeAccount) -> list[list[object]]:
    parts = [("English prefilter", account.prefilter), ("proxy", account.proxy), ("simulation", account.simulation),
             ("per found pair (prefilter included)" if account.prefilter else "per found pair",
              account.per_found_pair),
             ("per found pair, search alone", account.per_found_pair_search if account.prefilter else None),
             ("this invocation sent (requests)", account.this_invocation)]
    return [[name, *(getattr(spend, f) for f in SPEND_FIELDS)] for name, spend in parts if spend is not None]


def write_probe_report(out: str | Path) -> Path:
    """Write report.html from account.json, sources.json, the candidate list and config.yaml of run `out`."""
    out = Path(out)
    account = ProbeAccount.model_validate_json((out / "account.json").read_text(encoding="utf-8"))
    sample_path = out / "sources.json"
    sample = SourceSample.model_validate_json(sample_path.read_text(encoding="utf-8")) if sample_path.exists() else None
    candidates = probe_candidates(out).records()
    simulators = sorted({name for c in candidates for name in c.beta_en})
    findings = [
        recipe_table({out.name: account}),
        table("table-spend", "What the run spent over all its invocations, each paid request counted once (calls of "
              "simulators = questions answered)",
              ["part", "calls", "prompt tokens", "completion tokens", "seconds", "cost (USD)"], _spend_rows(account)),
        table("table-pairs", "Pairs in the candidate list", ["pair", "source", "depth", "V",
              *(f"β_E {s}" for s in simulators), *(f"β_T {s}" for s in simulators), "inserted English text"],
              [[c.id, c.source_id, c.depth, c.value, *(c.beta_en[s] for s in simulators),
                *(c.beta_target[s] for s in simulators), c.lineage[-1].perturbation_en if c.lineage else ""]
               for c in candidates], text_columns=2),
    ]
    if not candidates:
        findings.append(paragraph("The candidate list is empty.", "note"))
    categories = _categories(out, {c.id for c in candidates})
    if categories:
        findings.append(counts_html("table-categories", "Subject domains of the pairs (Table 4's six; invalid "
                                    "answers left out)", category_table(categories)))
    counts = {"scored pairs": account.scored, "unscored pairs (invalid after re-simulation)": account.unscored,
              "invalid answers (each asked again)": account.invalid_answers,
              "untranslated sources": account.untranslated, "duplicate children": account.duplicates,
              "dropped by the cap k": account.dropped_by_cap,
              **{f"rejected: {k}": v for k, v in account.rejected.items()}}
    collapsed: list[tuple[str, list[str]]] = [("Search counts", [meta_table(counts, "table-counts", "Counts")])]
    if sample is not None:
        collapsed.append(("Sources and the English prefilter", [
            paragraph(f"{sample.drawn} questions drawn with seed {sample.seed}; {sample.kept} kept, "
                      f"{sample.dropped_wrong} dropped as wrong in English, {sample.dropped_invalid} as invalid."),
            table("table-sources", "Per source file", ["file", "available", "unusable", "drawn", "kept"],
                  [[f.name, f.available, f.unusable, f.drawn, f.kept] for f in sample.files]),
            meta_table({"wrong in English": sample.wrong_by_simulator,
                        "invalid in English": sample.invalid_by_simulator}, "table-prefilter", "Per simulator"),
        ]))
    config = run_config(out)
    note = base_model_note({out.name: config})
    config.pop("sources", None)
    collapsed.append(("Settings", [meta_table(config, "table-config", "config.yaml (source ids left out)"),
                                   paragraph("account.json: " + json.dumps(account.model_dump(mode="json")))]))
    lead = probe_lead(account)
    html = report_page(f"Cross-Lingual Pitfalls probe: {account.recipe}, {account.lang}",
                       f"{note} {lead}" if note else lead, findings, collapsed)
    return atomic_write_text(out / "report.html", html)


def _categories(out: Path, ids: set[str]) -> list[tuple[str, str | None]]:
    """(language, category or None) of the candidates classified in the run's categories table."""
    rows = CategoryLog(out).rows
    return [(row.lang, row.category) for pair_id, row in rows.items() if pair_id in ids]
