"""`crossknow pitfalls expand` and `crossknow pitfalls affinity`: language affinity (section 3.3 of the paper)."""

from __future__ import annotations

from pathlib import Path

import typer

from crossknow.cli.consoles import console, errors
from crossknow.cli.options import config_command
from crossknow.cli.pitfalls_cmd import FLAGS
from crossknow.cli.progress import stage_bars
from crossknow.pitfalls.affinity.expansion_records import ExpandConfig
from crossknow.pitfalls.affinity.run import AffinityConfig

commands = typer.Typer()
"""This module's sub-commands, which `crossknow.cli.pitfalls_cmd` imports when they are asked for."""


@config_command(commands, ExpandConfig, flags={"seeds": "--seed-file", "timeout_s": "--timeout"}, name="expand")
def expand(
    config: ExpandConfig,
    out: Path = typer.Option(..., help="Run directory; run the same command again on it to resume."),
) -> None:
    """Translate sampled seed pairs into every other seed language (original part with its choices and answer
    as one checked output, inserted text separately); write items.jsonl, metrics.json and report.html."""
    from crossknow.cli.progress import spent
    from crossknow.generation.cached_calls import CostMeter
    from crossknow.pitfalls.affinity.expansion import run_expand
    from crossknow.report.pitfalls_affinity_report import write_expand_report

    with stage_bars(errors) as update:
        metrics = run_expand(config, out, on_progress=update)
    meter = CostMeter(calls=metrics.calls, cached_calls=metrics.cached_calls, prompt_tokens=metrics.tokens,
                      cost_usd=metrics.cost_usd)
    made = ", ".join(f"{lang} {n}" for lang, n in metrics.made.items())
    dropped = ", ".join(f"{reason} {n}" for reason, n in metrics.dropped.items()) or "none"
    pending = f"; {metrics.pending} translations failed in transport: run again to retry them" if metrics.pending \
        else ""
    console.print(f"expanded pairs per language: {made}; dropped: {dropped}", highlight=False)
    console.print(f"this run: {spent(meter)}; {metrics.seconds:.1f} s{pending}", highlight=False)
    console.print(f"items: {out / 'items.jsonl'}\nreport: {write_expand_report(out)}", highlight=False,
                  soft_wrap=True)


@config_command(commands, AffinityConfig, flags=FLAGS, name="affinity")
def affinity(
    config: AffinityConfig,
    out: Path = typer.Option(..., help="Run directory; run the same command again on it to resume."),
) -> None:
    """Evaluate expanded pairs (--pairs: items.jsonl of `expand`), then the accuracy table A_{x,y}, the Relative
    Affinity Score heatmap and, with --embed-model, the embedding distances and t-SNE; write report.html."""
    from crossknow.pitfalls.affinity.run import run_affinity
    from crossknow.report.pitfalls_affinity_report import write_affinity_report

    with stage_bars(errors) as update:
        metrics = run_affinity(config, out, on_progress=update)
    if metrics.ras is None:
        console.print(f"RAS not computed: {metrics.ras_error}", highlight=False)
    else:
        header = "x \\ y " + " ".join(f"{y:>7}" for y in metrics.languages)
        lines = [f"{x:<5} " + " ".join(f"{v:7.3f}" for v in row) for x, row in zip(metrics.languages, metrics.ras,
                                                                               strict=True)]
        console.print("Relative Affinity Score D_{x,y} (lower: stronger affinity)\n" + "\n".join([header, *lines]),
                      highlight=False, markup=False)
    console.print(f"report: {write_affinity_report(out)}", highlight=False, soft_wrap=True)
