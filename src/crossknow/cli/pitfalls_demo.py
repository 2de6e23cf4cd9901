"""`crossknow pitfalls demo`: the probe end to end with local models only, on the CPU, in minutes.

24 English questions written for crossknow (samples/pitfalls/); the embedded Gemma 3 270M is the proxy, asked in
completion form, and two simulators (the one model answering by loss under two normalisations: the demo's
stand-in for a second model). np, dp and a reduced beam run on the questions kept, with e5's semantic checks and
no categories. Its numbers check the machinery, not the paper's (docs/pitfalls.md).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from crossknow.cli.consoles import console, errors
from crossknow.cli.demo_cmd import demo_file
from crossknow.cli.phases import Phases
from crossknow.cli.progress import stage_bars
from crossknow.store.atomic import atomic_write_json

if TYPE_CHECKING:
    from crossknow.generation.clients import ClientPool
    from crossknow.pitfalls.probe.probe import ProbeAccount
    from crossknow.pitfalls.probe.run import PitfallsProbeConfig
    from crossknow.pitfalls.probe.sources import SourceSample
    from crossknow.pitfalls.proxy import ProxyLLM
    from crossknow.pitfalls.simulate import LossSimulator

Results = dict[str, tuple[tuple["ProbeAccount", "SourceSample"], float]]
"""Each run's name -> (its account and source sample, its seconds)."""

commands = typer.Typer()
"""This module's sub-command, which `crossknow.cli.pitfalls_cmd` imports when it is asked for."""

SOURCE_FILES = ("../pitfalls/science.jsonl", "../pitfalls/everyday.jsonl")
"""The demo's source files, relative to samples/demo/."""
ANSWERING = "loss (lm-eval: sum and per_char)"
"""How the demo's simulators answer, as recorded in sources.json."""
DEVICE = "cpu"
"""Where the demo's one model runs: the CPU, wherever it runs."""
SCORE_CHECK = "score+check"
"""The probes' work besides the proxy's generation: the simulators' answers by loss and e5's semantic checks."""
BEAM = {"initial_batch": 1, "width": 3, "depth": 1, "extended_depth": 2}
"""The demo's reduced beam (the paper's: 4, 12, 4, 6)."""


@commands.command()
def demo(
    out: Path = typer.Option(Path("runs/pitfalls-demo"), help="Directory of the three runs; run again to resume."),
    lang: str = typer.Option("ja", help="Target language code."),
    n: int = typer.Option(6, help="Questions drawn (equally over the two files) before the English prefilter."),
    beam_sources: int = typer.Option(5, help="Prefiltered questions the reduced beam searches."),
    proxy_max_tokens: int = typer.Option(64, help="Most tokens of one proxy output (the paper's: 1,024)."),
    seed: int = typer.Option(0, help="Seed of the draw."),
) -> None:
    """Probe short English questions with the embedded model as proxy and as two loss simulators: np, dp and a
    reduced beam, with their conversion rates and spend."""
    from crossknow.generation.clients import ClientPool
    from crossknow.pitfalls.probe.run import build_proxy

    phases = Phases()
    out.mkdir(parents=True, exist_ok=True)
    pool = ClientPool(out / "requests.sqlite")
    try:
        with phases("load"):
            simulators = load_the_model(pool)
        sources = [str(demo_file(name).resolve()) for name in SOURCE_FILES]
        configs = three_probes(out, sources, lang, n, beam_sources, proxy_max_tokens, seed, simulators)
        with phases(SCORE_CHECK):
            results = run_the_probes(out, configs, build_proxy(configs["np"], pool), simulators)
        phases.move(SCORE_CHECK, "generate", pool.meter().seconds)
    finally:
        pool.close()
    with phases("report"):
        table = write_reports_and_summary(out, results, phases)
    print_the_outcome(out, lang, results, table, phases)


def load_the_model(pool: ClientPool) -> list[LossSimulator]:
    """Load the embedded model once into `pool`, on the CPU: its generator (the proxy's, built from the pool later)
    and the two loss simulators over its weights (the lm-eval rule's summed log-probability and log-probability per
    character)."""
    from crossknow.generation.clients import Role
    from crossknow.models.access import ModelAccess
    from crossknow.pitfalls.simulate import LossSimulator
    from crossknow.scoring.normalise import Normalisation

    on_cpu = Role(access=ModelAccess(device=DEVICE))  # the probes' proxy: the same model, loaded once
    pool.generator("default", on_cpu)
    scorer = pool.scorer("default", on_cpu)  # the generator's weights, loaded once
    return [LossSimulator("default/loss-sum", scorer, "lm-eval", Normalisation.SUM),
            LossSimulator("default/loss-per-char", scorer, "lm-eval", Normalisation.PER_CHAR)]


def three_probes(out: Path, sources: list[str], lang: str, n: int, beam_sources: int, proxy_max_tokens: int,
                 seed: int, simulators: Sequence[LossSimulator]) -> dict[str, PitfallsProbeConfig]:
    """The three runs' configs: the np and dp recipes, and the reduced beam (`paper` with `BEAM`) on the first
    `beam_sources` prefiltered questions; e5's judge-free checks, no subject-domain stage, one request cache."""
    from crossknow.pitfalls.probe.run import PitfallsProbeConfig

    base = dict(sources=sources, n=n, lang=lang, proxy="default", simulators=[s.name for s in simulators],
                seed=seed, proxy_max_tokens=proxy_max_tokens, max_attempts=2, device=DEVICE, categorize=False,
                similarity="e5", cache=str(out / "requests.sqlite"))
    return {
        "np": PitfallsProbeConfig(recipe="np", **base),
        "dp": PitfallsProbeConfig(recipe="dp", **base),
        "beam": PitfallsProbeConfig(recipe="paper", limit=beam_sources, **base, **BEAM),
    }


def run_the_probes(out: Path, configs: dict[str, PitfallsProbeConfig], proxy: ProxyLLM,
                   simulators: Sequence[LossSimulator]) -> Results:
    """Run each probe into `out`/its name, one after another, with the models already loaded and progress bars;
    each run resumes where a former demo stopped."""
    from crossknow.pitfalls.probe.run import probe_from_config

    results = {}
    with stage_bars(errors) as update:
        for name, config in configs.items():
            begun = time.monotonic()
            found = probe_from_config(
                config, out / name, lambda stage, done, total, meter, run=name: update(
                    f"{run}: {stage}", done, total, meter),
                proxy=proxy, simulators=simulators, answering=ANSWERING)
            results[name] = (found, time.monotonic() - begun)
    return results


def write_reports_and_summary(out: Path, results: Results, phases: Phases) -> Table:
    """Each run's report, the side-by-side report of the three (`out`/report.html) and demo.json (accounts,
    seconds, draws); returns the table of conversion rates and spend."""
    from crossknow.report.pitfalls_probe_report import write_probe_report, write_recipes_report

    table = Table("recipe", "sources", "converted", "conversion rate", "pairs", "beyond depth 0", "calls / pair",
                  "s / pair", "seconds")
    summary = {"load_seconds": round(phases.seconds["load"], 1), "runs": {}}
    for name, ((account, sample), seconds) in results.items():
        per = account.per_found_pair
        table.add_row(name, str(account.sources), str(account.converted), f"{account.conversion_rate:.1%}",
                      str(account.candidates), str(account.pairs_beyond_depth_0), f"{per.calls:.1f}" if per else "—",
                      f"{per.seconds:.1f}" if per else "—", f"{seconds:.1f}")
        write_probe_report(out / name)
        summary["runs"][name] = {"account": account.model_dump(mode="json"), "seconds": round(seconds, 1),
                                 "drawn": sample.drawn, "kept": sample.kept}
    write_recipes_report(out, {name: out / name for name in results})
    summary["seconds"] = round(phases.total(), 1)
    atomic_write_json(out / "demo.json", summary)
    return table


def print_the_outcome(out: Path, lang: str, results: Results, table: Table, phases: Phases) -> None:
    """Print the base-model note, the English prefilter's counts, the table, one pair of each run that found one,
    and where the seconds went and the reports are."""
    from crossknow.report.pitfalls_probe_report import base_model_note, run_config

    note = base_model_note({name: run_config(out / name) for name in results})
    if note:
        console.print(note, style="yellow", highlight=False, soft_wrap=True)
    sample = results["np"][0][1]
    console.print(f"English prefilter: {sample.kept} of {sample.drawn} drawn questions kept "
                  f"({sample.dropped_wrong} wrong, {sample.dropped_invalid} invalid)")
    console.print(table)
    for name in results:
        lines = (out / name / "candidates.jsonl").read_text(encoding="utf-8").splitlines() \
            if (out / name / "candidates.jsonl").exists() else []
        if lines:
            pair = json.loads(lines[0])
            console.print(f"a {name} pair (V = {pair['value']:.2f}, depth {pair['depth']}): "
                          f"en {pair['english']['question']!r} / {lang} {pair['target']['question']!r}",
                          highlight=False, soft_wrap=True)
    console.print(f"demo finished in {phases.line()}; reports: {out}/report.html and {out}/{{np,dp,beam}}/report.html",
                  highlight=False)
