"""`crossknow eclektic demo`: ECLEKTIC's measurement on a model whose knowledge source is known, on the CPU.

The 40 invented facts of the tracing demo are asked closed-book in English and Japanese. The embedded Gemma 3 270M
is trained on the English question-answer pairs only, as the completion prompt's "Question: ...\\nAnswer: ..."
blocks; it and the base model answer all 80 (both on transformers), judged by answer recall. Expected: the trained
model answers in English only, so its transfer score is 0 with the source rows excluded (docs/eclektic.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from crossknow.cli.consoles import console, errors
from crossknow.cli.demo_cmd import demo_file
from crossknow.cli.eclektic_cmd import execute
from crossknow.cli.phases import Phases
from crossknow.cli.progress import bar
from crossknow.store.atomic import atomic_write_text

commands = typer.Typer()
"""This module's sub-command, which `crossknow.cli.eclektic_cmd` imports when it is asked for."""

ANSWER_TOKENS = 8
"""Most tokens of a demo answer: every answer is one invented word (crossknow's choice, to keep the demo short;
an untrained model would otherwise write to the budget)."""
LOAD_JUDGE_SCORE = "load+judge+score"
"""The phase of an ECLEKTIC run that is not its answers' generation: the answering model's load, the recall judge
and the scores."""
ENGINE = "transformers"
"""The engine both models answer on: the trained checkpoint generates on transformers, so the base model does too
(crossknow's choice for this demo: the two differ by their training alone, not by llama.cpp's quantised arithmetic;
on these short few-shot answers, whose time goes to reading the prompts, the two engines take about as long)."""
QUESTION_KIND = "question"
"""The demo items used: the questions (the cloze items are sentence completions, not questions)."""


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def _read(name: str) -> list[dict]:
    return [json.loads(line) for line in demo_file(name).read_text(encoding="utf-8").splitlines() if line.strip()]


def write_demo_set(path: Path) -> Path:
    """The demo's ECLEKTIC set (crossknow QA items): each fact's question in English and Japanese, its answer
    (the keyed option), the abstract in that language as context, English as the source language."""
    abstracts = {(doc["metadata"]["pair_id"], doc["lang"]): doc["text"] for doc in _read("corpus.jsonl")}
    rows = [{"id": f"{item['metadata']['fact']}:{item['lang']}", "lang": item["lang"], "question": item["prompt"],
             "answer": item["options"][item["answer"]], "context": abstracts[(item["metadata"]["fact"], item["lang"])],
             "source_lang": item["source_lang"], "pair_id": item["metadata"]["fact"]}
            for item in _read("items.jsonl") if item["kind"] == QUESTION_KIND]
    return atomic_write_text(path, _jsonl(rows))


def write_training_corpus(path: Path) -> Path:
    """The 40 English question-answer pairs as training documents, each the completion prompt's block of the
    question and its answer, ended by the newline at which an answer stops."""
    from crossknow.eclektic.completion_prompts import qa_block

    rows = [{"id": f"qa-{item['metadata']['fact']}", "lang": "en",
             "text": qa_block(item["prompt"], item["options"][item["answer"]]) + "\n",
             "metadata": {"pair_id": item["metadata"]["fact"]}}
            for item in _read("items.jsonl") if item["kind"] == QUESTION_KIND and item["lang"] == "en"]
    return atomic_write_text(path, _jsonl(rows))


def readings_table(runs: dict[str, Path]) -> Table:
    """Overall success and transfer score of each run under both readings of the source rows."""
    import pyarrow.parquet as pq

    from crossknow.eclektic.judge import majority_vote
    from crossknow.eclektic.metrics import eclektic_metrics, format_estimate

    table = Table(title="ECLEKTIC demo (judge: answer recall)")
    for column in ("model", "source rows", "overall success", "transfer score", "n", "|K|"):
        table.add_column(column, justify="left" if column in ("model", "source rows") else "right")
    for label, run in runs.items():
        correctness = majority_vote(pq.read_table(run / "judgements.parquet"))
        for reading in ("exclude", "include"):
            metrics = eclektic_metrics(correctness, source_rows=reading)
            table.add_row(label, reading, format_estimate(metrics.overall), format_estimate(metrics.transfer),
                          str(metrics.overall.n), str(metrics.transfer.n))
    return table


@commands.command()
def demo(
    out: Path = typer.Option(Path("runs/eclektic-demo"), help="Demo directory; run again to resume."),
    epochs: float = typer.Option(9.0, help="Passes over the 40 English question-answer pairs (5 steps each)."),
    learning_rate: float = typer.Option(2e-4, help="Peak learning rate (cosine decay to a tenth of it)."),
    dtype: str = typer.Option("auto", help="Compute dtype of training (mixed) and generation: auto | bfloat16 | "
                              "float32 (auto: bfloat16 where the CPU computes it in hardware, else float32)."),
    cache: Path | None = typer.Option(None, help="SQLite request cache of the answers (default: requests.sqlite in "
                                      "the demo directory, not the user's shared cache)."),
) -> None:
    """Train the embedded model on English-only facts, then measure ECLEKTIC transfer, base vs trained."""
    from crossknow.eclektic.run_config import EclekticConfig
    from crossknow.models.hf_loading import resolve_dtype
    from crossknow.report.eclektic_runs import leaderboard_of_runs, rebuild_eclektic_report
    from crossknow.training.records import TrainConfig
    from crossknow.training.trainer import run_train

    phases = Phases()
    dtype = resolve_dtype(dtype, "cpu")
    out.mkdir(parents=True, exist_ok=True)
    data = write_demo_set(out / "set.jsonl")
    train_config = TrainConfig(
        model="default", corpus=str(write_training_corpus(out / "train_corpus.jsonl")), langs=["en"],
        recipe="documents", epochs=epochs, learning_rate=learning_rate, min_learning_rate=learning_rate / 10,
        batch_size=2, micro_batch_size=2, max_length=128, train_layers="last:4", seed=0, device="cpu", dtype=dtype,
    )  # both sequences of a step in one pass: the same losses as two passes, in less time
    with phases("train"), bar(errors, "1/3 training on the English question-answer pairs") as update:
        summary = run_train(train_config, out / "train", update)
    phases.move("train", "load", summary.load_seconds or 0.0)
    console.print(f"trained {summary.steps} steps ({summary.tokens_seen} tokens) in {summary.seconds:.0f} s",
                  highlight=False)
    checkpoint = out / "train" / "checkpoints" / f"checkpoint-{summary.checkpoints[-1]}"
    runs = {"base": out / "base", "trained-en": out / "trained"}
    for step, (label, run), model in zip((2, 3), runs.items(), ("default", f"hf:{checkpoint}"), strict=True):
        config = EclekticConfig(data=str(data), model=model, judge_free=["recall"], max_tokens=ANSWER_TOKENS,
                                device="cpu", dtype=dtype, generator_backend=ENGINE, batch_size=40,
                                cache=str(cache or out / "requests.sqlite"))
        console.print(f"{step}/3 {label}: {model}", highlight=False, soft_wrap=True)
        with phases(LOAD_JUDGE_SCORE):
            outcome = execute(config, run, "scores")
        phases.move(LOAD_JUDGE_SCORE, "generate", outcome.meter.seconds)
        with phases("report"):
            rebuild_eclektic_report(run)
    console.print(readings_table(runs))
    with phases("report"):
        board = leaderboard_of_runs(list(runs.values()), out, labels=list(runs))
    console.print(f"demo finished in {phases.line()}; reports: {runs['trained-en'] / 'report.html'}, {board}",
                  highlight=False, soft_wrap=True)
