"""`crossknow generate`: build AdaXEval multiple-choice sets from a bilingual corpus with LLMs."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from crossknow.cli.app import app, console, errors
from crossknow.generation.structured import CostMeter


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


@app.command()
def generate(
    corpus: Path = typer.Option(..., help="Corpus: JSONL documents {id, lang, text, metadata: {pair_id, ...}}."),
    out: Path = typer.Option(..., help="Run directory; run the same command again on it to resume."),
    langs: str = typer.Option("en,ja", help="The two languages of the pairs, comma-separated."),
    detector: list[str] = typer.Option(
        ..., help="Fact detector generator spec, repeatable (the paper: 3); openai:MODEL or openai:MODEL@URL."
    ),
    writer: str = typer.Option(..., help="Generator that writes queries and distractors and judges quality."),
    ner: list[str] = typer.Option([], help="NER backend: heuristic | spacy:MODEL | llm:SPEC, or LANG=SPEC."),
    sample: int | None = typer.Option(None, help="Sentences per language, drawn from those passing the NER filter."),
    docs: int | None = typer.Option(None, help="Document pairs to use, drawn at random (default: all)."),
    threshold: float | None = typer.Option(None, help="Keep sentences whose summed P(yes) exceeds this (2/3 of N)."),
    min_yes: int = typer.Option(2, help="Detectors that must say yes."),
    seed: int = typer.Option(0, help="Seed of samples, option order and LLM sampling (recorded in config.yaml)."),
    quality_filter: bool = typer.Option(True, help="Keep only all-Good items with cross-language support 2."),
    base_url: str | None = typer.Option(None, help="OpenAI-compatible server URL for openai: specs."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", help="Environment variable holding the --base-url API key."),
    server_api_key_env: str = typer.Option(
        "VLLM_API_KEY", help="Environment variable holding the key of servers named as openai:MODEL@URL."
    ),
    json_mode: str = typer.Option("auto", help="auto | json_schema | json_object | none: how to ask servers for JSON."),
    max_tokens: int = typer.Option(512, help="Most tokens per LLM answer."),
    max_attempts: int = typer.Option(3, help="Calls per prompt before its output counts as invalid."),
    batch_size: int = typer.Option(16, help="Inputs per committed shard."),
    concurrency: int = typer.Option(8, help="Requests in flight per server (1 for llama.cpp: one at a time)."),
    timeout: float = typer.Option(300.0, help="Seconds before a server request is retried."),
    prompts: Path | None = typer.Option(None, help="Directory of LANG.yaml prompt files (add or replace languages)."),
    cache: Path | None = typer.Option(None, help="SQLite request cache (default: the crossknow cache directory)."),
    prices: Path | None = typer.Option(None, help="YAML/JSON model prices, USD per 1M tokens."),
) -> None:
    """Generate AdaXEval sets (memorisation cloze, generalisation question, interlingual pairing)."""
    from crossknow.adaxeval.pipeline import run_generate
    from crossknow.adaxeval.records import GenerateConfig

    lang_list = [lang.strip() for lang in langs.split(",") if lang.strip()]
    config = GenerateConfig(
        corpus=str(corpus), langs=lang_list, detectors=detector, writer=writer, ner=_ner_specs(ner, lang_list),
        threshold=threshold, min_yes=min_yes, sample=sample, docs=docs, seed=seed, quality_filter=quality_filter,
        max_tokens=max_tokens, max_attempts=max_attempts, json_mode=json_mode,
        prompts=str(prompts) if prompts else None, base_url=base_url, api_key_env=api_key_env,
        server_api_key_env=server_api_key_env,
        cache=str(cache) if cache else None, prices=str(prices) if prices else None,
        batch_size=batch_size, concurrency=concurrency, timeout_s=timeout,
    )
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
    for lang in lang_list:
        ratio, longest = summary.length_ratio.get(lang), summary.answer_longest.get(lang)
        if ratio is not None and longest is not None:
            console.print(
                f"{lang}: distractor/answer length ratio {ratio:.2f}; answer is the longest option in "
                f"{longest:.0%} of items (chance 25%)"
            )
    if summary.unpaired_documents:
        console.print(f"{summary.unpaired_documents} documents without a complete pair were skipped")
    console.print(
        f"this run: {summary.calls_this_run} model calls, {summary.cached_calls_this_run} from the cache; "
        f"all calls behind the run: ${summary.cost_usd:.4f}; {summary.seconds:.1f} s"
    )
    invalid = sum(sum(row.invalid.values()) for row in summary.counts)
    if invalid:
        console.print(f"{invalid} inputs with invalid LLM output (see {out / 'invalid.jsonl'})")
    console.print(f"sets: {out / 'dataset'}; run directory: {out}")
