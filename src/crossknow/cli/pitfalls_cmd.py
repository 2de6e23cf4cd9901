"""`crossknow pitfalls`: Cross-Lingual Pitfalls. `probe` searches for bilingual pairs and `eval` answers pairs with
any models (both defined here); `expand`, `affinity`, `categorize`, `demo` and `finetune` live in their own modules,
imported when asked for."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from crossknow.cli.consoles import console, errors
from crossknow.cli.lazy import lazy_group
from crossknow.cli.options import config_command
from crossknow.cli.progress import stage_bars
from crossknow.pitfalls.eval_records import PitfallsEvalConfig
from crossknow.pitfalls.probe.run import PitfallsProbeConfig

if TYPE_CHECKING:
    from crossknow.pitfalls.probe.probe import ProbeAccount
    from crossknow.pitfalls.probe.sources import SourceSample

COMMANDS = {
    "expand": "crossknow.cli.pitfalls_affinity_cmd",
    "affinity": "crossknow.cli.pitfalls_affinity_cmd",
    "categorize": "crossknow.cli.pitfalls_categorize_cmd",
    "demo": "crossknow.cli.pitfalls_demo",
    "finetune": "crossknow.cli.pitfalls_finetune_cmd",
}
"""The sub-commands defined in their own modules (after eval and probe, defined here), imported when asked for."""

pitfalls_app = typer.Typer(
    cls=lazy_group(COMMANDS),
    help="Cross-Lingual Pitfalls: questions that models answer in English but not in a target language.",
    no_args_is_help=True,
)
commands = typer.Typer()
"""This module's group, which `crossknow.cli.app` imports when it is asked for (`crossknow.cli.lazy`)."""
commands.add_typer(pitfalls_app, name="pitfalls")

FLAGS = {"models": "--model", "timeout_s": "--timeout"}
"""Config fields whose option is not `--field-name`."""


@config_command(pitfalls_app, PitfallsEvalConfig, flags=FLAGS, name="eval")
def evaluate(
    config: PitfallsEvalConfig,
    out: Path = typer.Option(..., help="Run directory; run the same command again on it to resume."),
) -> None:
    """Answer both sides of every pair with every model; write pairs.parquet, metrics.json and report.html."""
    from crossknow.cli.progress import spent, whole_run
    from crossknow.generation.cached_calls import CostMeter
    from crossknow.pitfalls.evaluation import run_pitfalls_eval
    from crossknow.report.pitfalls_figures import pair_table_text, write_eval_report

    with stage_bars(errors) as update:
        metrics = run_pitfalls_eval(config, out, on_progress=update)
    console.print(pair_table_text(metrics), highlight=False, soft_wrap=True)
    meter = CostMeter(calls=metrics.calls, cached_calls=metrics.cached_calls, prompt_tokens=metrics.tokens,
                      cost_usd=metrics.cost_usd)
    pending = f"; {metrics.pending} answers failed in transport: run again to retry them" if metrics.pending else ""
    console.print(f"{metrics.n_usable} usable pairs of {metrics.n_read} read ({metrics.n_flawed} flawed, see "
                  f"invalid.jsonl); this invocation: {spent(meter)}; {metrics.seconds:.1f} s; whole run: "
                  f"{whole_run(metrics.run_calls, metrics.run_tokens, metrics.run_cost_usd)}{pending}",
                  highlight=False)
    console.print(f"report: {write_eval_report(out)}", highlight=False, soft_wrap=True)


PROBE_FLAGS = {"simulators": "--simulator", "base_urls": "--base-url", "timeout_s": "--timeout"}
"""Probe config fields whose option is not `--field-name`."""


@config_command(pitfalls_app, PitfallsProbeConfig, flags=PROBE_FLAGS, name="probe")
def probe(
    config: PitfallsProbeConfig,
    out: Path = typer.Option(..., help="Run directory; run the same command again on it to resume."),
) -> None:
    """Draw English questions, keep those every simulator answers right, search them for bilingual pairs that
    the simulators answer in English but not in the target language; write candidates, account.json and
    report.html."""
    from crossknow.pitfalls.probe.run import probe_from_config

    for note in config.deprecations():
        errors.print(note, highlight=False, soft_wrap=True)
    with stage_bars(errors) as update:
        account, sample = probe_from_config(config, out, update)
    print_probe(account, sample, out)


def print_probe(account: ProbeAccount, sample: SourceSample, out: Path) -> None:
    """The probe's outcome on the console: the prefilter, the conversion rate, the spend per found pair,
    and the report's path."""
    from crossknow.report.pitfalls_probe_report import probe_lead, write_probe_report

    console.print(f"sources: {sample.drawn} drawn, {sample.kept} kept by the English prefilter "
                  f"({sample.dropped_wrong} wrong, {sample.dropped_invalid} invalid in English)", highlight=False)
    console.print(probe_lead(account), highlight=False, soft_wrap=True)
    prefilter = account.prefilter
    console.print(f"whole run: proxy {account.proxy.calls:.0f} calls, ${account.proxy.cost_usd:.4f}; simulation "
                  f"{account.simulation.calls:.0f} questions, ${account.simulation.cost_usd:.4f}; "
                  + (f"English prefilter {prefilter.calls:.0f} questions, ${prefilter.cost_usd:.4f}; "
                     if prefilter is not None else "")
                  + f"{account.seconds:.1f} s; {account.found_now} pairs found by this invocation", highlight=False)
    if account.this_invocation is not None:
        now = account.this_invocation
        console.print(f"this invocation sent {now.calls:.0f} requests (cache hits excluded), "
                      f"{now.prompt_tokens + now.completion_tokens:,.0f} tokens, ${now.cost_usd:.4f}; "
                      f"{now.seconds:.1f} s", highlight=False)
    if account.unfinished:
        console.print(f"{account.unfinished} batches unfinished (a translation request failed in transport): run "
                      "the same command again to finish them", style="yellow", highlight=False)
    console.print(f"report: {write_probe_report(out)}", highlight=False, soft_wrap=True)
