"""`crossknow eclektic`: closed-book cross-lingual transfer (ECLEKTIC): answer, judge, score, run, report, demo.

`answer`, `judge` and `run` take the same options (one config, config.yaml of the run directory) and take the
run to its answers, its judgements, or its scores and report; each resumes where a killed run stopped.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from crossknow.cli.consoles import console, errors
from crossknow.cli.lazy import lazy_group
from crossknow.cli.options import config_command
from crossknow.cli.progress import spent, stage_bars, whole_run
from crossknow.eclektic.build_records import BuildConfig
from crossknow.eclektic.run_config import EclekticConfig, ScoreConfig

eclektic_app = typer.Typer(
    cls=lazy_group({"demo": "crossknow.cli.eclektic_demo"}),
    help="ECLEKTIC: closed-book questions on facts that live in one language, asked in every language.",
    no_args_is_help=True,
)
commands = typer.Typer()
"""This module's group, which `crossknow.cli.app` imports when it is asked for (`crossknow.cli.lazy`)."""
commands.add_typer(eclektic_app, name="eclektic")

FLAGS = {"judges": "--judge", "timeout_s": "--timeout"}
"""Config fields whose option is not `--field-name`."""
OUT_HELP = "Run directory; run the same command again on it to resume."


def scores_table(label: str, metrics) -> Table:
    """Overall success and transfer score as Table 2 prints them, with n, |K| and the invalid rows."""
    from crossknow.eclektic.metrics import format_estimate

    table = Table(title=f"ECLEKTIC (source rows: {metrics.source_rows}; {metrics.confidence:.0%} intervals, "
                        f"{metrics.ci})")
    for column in ("model", "overall success", "transfer score", "n", "|K|", "invalid"):
        table.add_column(column, justify="left" if column == "model" else "right")
    table.add_row(label, format_estimate(metrics.overall), format_estimate(metrics.transfer), str(metrics.overall.n),
                  str(metrics.transfer.n), str(metrics.n_invalid + metrics.n_missing_source))
    return table


def execute(config: EclekticConfig, out: Path, until: str):
    """Run `config` into `out` as far as `until` with progress bars; print what it cost."""
    from crossknow.eclektic.run import run_eclektic

    with stage_bars(errors) as update:
        outcome = run_eclektic(config, out, until=until, on_progress=update)  # type: ignore[arg-type]
    from crossknow.report.eclektic_runs import judge_warnings

    note = f"; {outcome.pending} questions failed in transport: run again to retry them" if outcome.pending else ""
    whole = outcome.whole_run
    console.print(f"{outcome.examples} examples; this invocation: {spent(outcome.meter)}; {outcome.seconds:.1f} s; "
                  f"whole run: {whole_run(whole.calls, whole.tokens, whole.cost_usd)}{note}", highlight=False)
    for warning in judge_warnings(out) if until == "scores" else []:
        errors.print(f"[yellow]warning:[/yellow] {warning}; the scores rest on the other verdicts", highlight=False)
    return outcome


@config_command(eclektic_app, EclekticConfig, flags=FLAGS)
def answer(config: EclekticConfig, out: Path = typer.Option(..., help=OUT_HELP)) -> None:
    """Ask the model every question in every language (answers.parquet)."""
    execute(config, out, "answers")
    console.print(f"answers: {out / 'answers.parquet'}", highlight=False, soft_wrap=True)


@config_command(eclektic_app, EclekticConfig, flags=FLAGS)
def judge(config: EclekticConfig, out: Path = typer.Option(..., help=OUT_HELP)) -> None:
    """Answer (where not done), then judge every answer with every judge (judgements.parquet)."""
    execute(config, out, "judgements")
    console.print(f"judgements: {out / 'judgements.parquet'}", highlight=False, soft_wrap=True)


@config_command(eclektic_app, EclekticConfig, flags=FLAGS)
def run(config: EclekticConfig, out: Path = typer.Option(..., help=OUT_HELP)) -> None:
    """Answer, judge and score; write metrics.json, examples.parquet and report.html."""
    from crossknow.report.eclektic_runs import rebuild_eclektic_report

    outcome = execute(config, out, "scores")
    console.print(scores_table(config.model.spec, outcome.metrics))
    console.print(f"report: {rebuild_eclektic_report(out)}", highlight=False, soft_wrap=True)


@config_command(eclektic_app, ScoreConfig)
def score(
    config: ScoreConfig,
    run: Path | None = typer.Option(None, help="Score this run directory again (its judgements)."),
    judgements: Path | None = typer.Option(None, help="Or score a JSONL of judgements made elsewhere: one object a "
                                           "line with q_id, source_lang, target_lang, correct (true, false or null)."),
    out: Path | None = typer.Option(None, help="Run directory for --judgements."),
) -> None:
    """Compute overall success and transfer score (metrics.json, examples.parquet, report.html)."""
    from crossknow.eclektic.run import rescore_run, score_judgement_file
    from crossknow.errors import CrossknowError
    from crossknow.report.eclektic_runs import rebuild_eclektic_report

    if (run is None) == (judgements is None):
        raise CrossknowError("give either --run DIR (a run's judgements) or --judgements FILE with --out DIR")
    if judgements is not None:
        if out is None:
            raise CrossknowError("--judgements needs --out DIR, the run directory to write the scores into")
        metrics, target = score_judgement_file(judgements, out, config), out
    else:
        metrics, target = rescore_run(run, config), run  # type: ignore[arg-type]
    console.print(scores_table(str(judgements or run), metrics))
    console.print(f"report: {rebuild_eclektic_report(target)}", highlight=False, soft_wrap=True)


@eclektic_app.command()
def report(
    run: list[Path] = typer.Option(..., help="A scored run directory; repeat for a leaderboard."),
    out: Path | None = typer.Option(None, help="Where to write: default the run (one) or the current directory."),
    label: list[str] = typer.Option([], help="A model's label, one per --run in order (default: its model spec)."),
    params: list[str] = typer.Option([], help="A model's parameter count (7.6e9, 7.6B, 270M or -), one per --run in "
                                     "order (default: the --params its run recorded)."),
) -> None:
    """Rebuild a run's report.html, or compare several runs (leaderboard.html, the size plot)."""
    from crossknow.report.eclektic_runs import leaderboard_of_runs, rebuild_eclektic_report

    if len(run) == 1 and not label and not params:
        path = rebuild_eclektic_report(run[0], out)
    else:
        path = leaderboard_of_runs(run, out or Path("."), labels=label, params=params)
    console.print(str(path), highlight=False, soft_wrap=True)


@config_command(eclektic_app, BuildConfig, flags={"timeout_s": "--timeout"}, comma_lists=("languages",))
def build(
    config: BuildConfig,
    out: Path = typer.Option(..., help="Output directory; run the same command again on it to resume."),
    cache: Path | None = typer.Option(None, help="SQLite request cache (unset: the user's cache directory)."),
    prices: Path | None = typer.Option(None, help="YAML/JSON file of model prices (USD per 1M tokens)."),
) -> None:
    """Build an ECLEKTIC-style set from single-language articles; export review.csv for human review."""
    from crossknow.eclektic.build import build_role, build_set
    from crossknow.generation.clients import ClientPool
    from crossknow.generation.pricing import PriceTable

    role = build_role(config)
    role.parse(config.model.spec)
    pool = ClientPool(cache, PriceTable.load(prices) if prices else None, run_dir=out)
    try:
        with stage_bars(errors) as update:
            result = build_set(config, lambda: pool.client(config.model.spec, role), out, on_progress=update)
    finally:
        pool.close()
    summary = result.summary
    console.print(f"{summary.questions} questions; {summary.flagged_rows} translated rows flagged by the pivot check; "
                  f"invalid outputs: {summary.invalid}; this run: {summary.calls} calls, {summary.cached_calls} "
                  f"cached, ${summary.cost_usd_this_run:.4f}", highlight=False)
    console.print(f"review sheet: {out / 'review.csv'}; after review: crossknow eclektic import-review --sheet "
                  f"{out / 'review.csv'} --out SET.jsonl", highlight=False, soft_wrap=True)


@eclektic_app.command("import-review")
def import_review(
    sheet: Path = typer.Option(..., help="The reviewed review.csv of `crossknow eclektic build`."),
    out: Path = typer.Option(..., help="The set to write, in ECLEKTIC's released JSON lines."),
) -> None:
    """Import a reviewed sheet into ECLEKTIC's released format (questions with a rejected row or criterion
    dropped, fixes applied)."""
    from crossknow.eclektic.review_sheet import import_sheet

    summary = import_sheet(sheet, out)
    shown = "; ".join(f"{q_id}: {reason}" for q_id, reason in list(summary.dropped.items())[:5])
    more = f"; and {len(summary.dropped) - 5} more" if len(summary.dropped) > 5 else ""
    console.print(f"{summary.questions} questions, {summary.rows} rows written to {summary.out}; dropped "
                  f"{len(summary.dropped)} questions" + (f" ({shown}{more})" if shown else ""),
                  highlight=False, soft_wrap=True)
