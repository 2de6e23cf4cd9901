"""`crossknow generate`: build AdaXEval multiple-choice sets from a bilingual corpus with LLMs."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from crossknow.adaxeval.records import GenerateConfig
from crossknow.cli.consoles import console, errors
from crossknow.cli.options import config_command
from crossknow.generation.cached_calls import CostMeter

commands = typer.Typer()
"""This module's command, which `crossknow.cli.app` imports when it is asked for (`crossknow.cli.lazy`)."""


def _spent(meter: CostMeter) -> str:
    tokens = meter.prompt_tokens + meter.completion_tokens
    return f"{meter.calls} calls, {meter.cached_calls} cached, {tokens:,} tokens, ${meter.cost_usd:.4f}"


def _ner_specs(values: list[str], langs: list[str]) -> dict[str, str]:
    """--ner SPEC (every language) or --ner LANG=SPEC, repeatable."""
    from crossknow.errors import CrossknowError

    specs: dict[str, str] = {}
    for value in values:
        lang, sep, spec = value.partition("=")
        if sep and ":" not in lang:
            specs[lang.strip()] = spec.strip()
        elif sep:
            raise CrossknowError(f"--ner {value!r}: write LANG=SPEC or SPEC")
        else:
            specs.update(dict.fromkeys(langs, value.strip()))
    return specs


def stage_table(summary) -> Table:
    """The stage counts as a rich table, like the paper's Table 1 (invalid LLM outputs in brackets)."""
    langs = list(summary.counts[0].counts)
    table = Table(title="AdaXEval generation")
    table.add_column("Step")
    for lang in langs:
        table.add_column(lang, justify="right")
    for row in summary.counts:
        cells = [f"{row.counts[lang]:,}" + (f" (+{row.invalid[lang]} invalid)" if row.invalid.get(lang) else "")
                 for lang in langs]
        table.add_row(row.label, *cells)
    return table


@config_command(commands, GenerateConfig, flags={"detectors": "--detector", "timeout_s": "--timeout"},
                comma_lists=("langs",), exclude=("ner",))
def generate(
    config: GenerateConfig,
    out: Path = typer.Option(..., help="Run directory; run the same command again on it to resume."),
    ner: list[str] = typer.Option(
        [],
        help="NER backend: heuristic | spacy:MODEL | hf:DIR | llm:SPEC for every language, or LANG=SPEC; repeatable. "
        "llm: asks a chat model for JSON, a base model (completion form) for one line of entities.",
    ),
) -> None:
    """Generate AdaXEval sets (memorisation cloze, generalisation question, interlingual pairing)."""
    from crossknow.adaxeval.pipeline import run_generate

    config = GenerateConfig.model_validate(config.model_dump() | {"ner": _ner_specs(ner, config.langs)})
    for note in config.deprecations():
        errors.print(note, highlight=False, soft_wrap=True)
    columns = (
        TextColumn("{task.description:<12}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.fields[spent]}"),
    )
    tasks: dict[str, TaskID] = {}
    with Progress(*columns, console=errors) as progress:

        def update(stage: str, done: int, total: int, spent: CostMeter) -> None:
            if stage not in tasks:
                tasks[stage] = progress.add_task(stage, total=total, spent="")
            progress.update(tasks[stage], completed=done, total=total, spent=_spent(spent))

        summary = run_generate(config, out, update)
    console.print(stage_table(summary))
    if summary.binary_confidence and config.fact_rule != "votes" and len(config.detectors.specs) > 1:
        console.print(
            "every detector confidence was 0 or 1 (no log-probabilities), so the sum rule kept only sentences "
            "that more than 2/3 of the detectors said yes to (with three: all three); --fact-rule votes keeps "
            "those at least --min-yes said yes to (Appendix A.1's two of three)"
        )
    for lang in config.langs:
        ratio, longest = summary.length_ratio.get(lang), summary.answer_longest.get(lang)
        if ratio is not None and longest is not None:
            console.print(
                f"{lang}: distractor/answer length ratio {ratio:.2f}; answer is the longest option in "
                f"{longest:.0%} of items (chance 25%)"
            )
    if summary.unpaired_documents:
        console.print(f"{summary.unpaired_documents} documents without a complete pair were skipped")
    from crossknow.store.spend_ledger import SpendLedger

    whole = SpendLedger(out).total()
    console.print(
        f"this invocation: {summary.calls_this_run} model calls, {summary.cached_calls_this_run} from the cache; "
        f"whole run: {whole.calls} model calls, {whole.tokens:,} tokens, ${whole.cost_usd:.4f}; "
        f"all calls behind the run's items: ${summary.cost_usd:.4f}; {summary.seconds:.1f} s"
    )
    invalid = sum(sum(row.invalid.values()) for row in summary.counts)
    if invalid:
        console.print(f"{invalid} inputs with invalid LLM output (see {out / 'invalid.jsonl'})")
    console.print(f"sets: {out / 'dataset'}; run directory: {out}")
