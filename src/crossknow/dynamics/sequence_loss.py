"""`crossknow trace-sequences`: the loss of training sequences and their perturbations at every checkpoint.

Each sequence is scored whole by the engine's Scorer (context "": BOS, then the sequence; a token-level variant's
ids as they are), its loss the mean token cross-entropy. Checkpoints share one loaded model as in `crossknow
trace`, and a killed run resumes where it stopped. A variant some checkpoint cannot score is left out at every
checkpoint (invalid.jsonl). The run directory's files: docs/adaxeval.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from crossknow.data.hub_data import data_file
from crossknow.data.jsonl import write_invalid
from crossknow.data.schemas import InvalidRecord
from crossknow.dynamics.checkpoint_sweep import sweep_checkpoints
from crossknow.dynamics.checkpoints import discover_checkpoints
from crossknow.dynamics.sequence_inputs import SequenceLossConfig, TracedSequence, read_sequences
from crossknow.dynamics.token_spans import token_spans
from crossknow.errors import CrossknowError
from crossknow.models.protocol import Scorer, ScoreRequest, ScoreResult
from crossknow.scoring.normalise import Normalisation, option_loss
from crossknow.scoring.stage import CHUNK_BATCHES, ModelPoint, score_isolating
from crossknow.store.atomic import atomic_write
from crossknow.store.config_keys import volatile_keys
from crossknow.store.hashing import file_sha256
from crossknow.store.run_dir import RunDir, ShardedTable

SEQUENCE_FILE = "sequence_loss.parquet"
TOKEN_FILE = "token_loss.parquet"


def _field(name: str, kind: pa.DataType, doc: str) -> pa.Field:
    return pa.field(name, kind, metadata={"doc": doc})


SEQUENCE_SCHEMA = pa.schema([
    _field("step", pa.int64(), "Training step of the checkpoint."),
    _field("checkpoint", pa.string(), "The checkpoint's label."),
    _field("variant_id", pa.string(), "The variant's id (unique in the sequences file)."),
    _field("source_id", pa.string(), "The original training sequence's id."),
    _field("lang", pa.string(), "Language of the sequence."),
    _field("method", pa.string(), "'original' or the perturbation (mask, random, delete, reorder, monosyn, mltsyn, "
                                  "partial, syntax, lexicon, semantic, translation)."),
    _field("x", pa.int64(), "Percent of tokens or sentences perturbed; null where the method has none."),
    _field("y", pa.int64(), "Window of a reorder; null otherwise."),
    _field("a", pa.int64(), "Segment index of partial-a; null otherwise."),
    _field("n_tokens", pa.int32(), "Tokens scored (the sequence's tokens after BOS)."),
    _field("logprob_sum", pa.float64(), "Summed log-probability of the sequence's tokens."),
    _field("loss", pa.float64(), "Mean token cross-entropy: -logprob_sum / n_tokens."),
])
"""sequence_loss.parquet: one row per checkpoint x variant."""

TOKEN_SCHEMA = pa.schema([
    _field("step", pa.int64(), "Training step of the checkpoint."),
    _field("checkpoint", pa.string(), "The checkpoint's label."),
    _field("variant_id", pa.string(), "The variant's id."),
    _field("lang", pa.string(), "Language of the sequence."),
    _field("position", pa.int32(), "0-based position of the token in the scored sequence (after BOS)."),
    _field("token_id", pa.int64(), "The token's id."),
    _field("token_text", pa.string(), "The token's vocabulary entry (e.g. '▁world', '<0xE8>')."),
    _field("char_start", pa.int32(), "First character of the sequence's text the token covers "
                                     "(crossknow.dynamics.token_spans); null where unknown."),
    _field("char_end", pa.int32(), "One past the last character the token covers; null where unknown."),
    _field("loss", pa.float64(), "The token's cross-entropy: -log p(token | the tokens before it)."),
])
"""token_loss.parquet: one row per checkpoint x variant x token (with --per-token)."""

_TOKEN_LISTS = [("token_ids", pa.int64()), ("token_texts", pa.string()), ("char_starts", pa.int32()),
                ("char_ends", pa.int32()), ("token_losses", pa.float64())]
STAGE_SCHEMA = pa.schema(list(SEQUENCE_SCHEMA) + [pa.field(name, pa.list_(kind)) for name, kind in _TOKEN_LISTS])
"""The `sequences` stage's shards: SEQUENCE_SCHEMA and, with --per-token, each token's values as lists."""
UNSCORABLE_SCHEMA = pa.schema([("step", pa.int64()), ("checkpoint", pa.string()), ("variant_id", pa.string()),
                               ("reason", pa.string())])
"""The `unscorable` stage: variants a checkpoint could not score, and why."""


def sequence_key(at: ModelPoint, sequence: TracedSequence) -> str:
    """The stage key of one variant at one checkpoint."""
    return f"{at.step}\t{sequence.variant_id}"


def sequence_request(sequence: TracedSequence) -> ScoreRequest:
    """The whole sequence after an empty context (BOS): its text, or its exact token ids."""
    return ScoreRequest("", sequence.text, continuation_ids=sequence.token_ids)


class SequenceStage:
    """The scored sequences and unscorable variants of one run directory."""

    def __init__(self, run: RunDir, batch_size: int, per_token: bool):
        self.scored = run.stage("sequences")
        self.unscorable = run.stage("unscorable")
        self.batch_size = max(batch_size, 1)
        self.per_token = per_token

    def done_keys(self) -> set[str]:
        """Keys of every variant already decided (scored or unscorable) at some checkpoint."""
        return self.scored.done_keys() | self.unscorable.done_keys()

    def run(self, scorer: Scorer, sequences: Sequence[TracedSequence], at: ModelPoint,
            on_progress: Callable[[int], None] | None = None) -> None:
        """Score every sequence not yet decided at `at`, longest text first, `batch_size` to a scorer call and
        `CHUNK_BATCHES` calls to a committed shard; `on_progress(n)` after each commit of n sequences."""
        if self.per_token and not (hasattr(scorer, "tokenizer") and hasattr(scorer, "encode_request")):
            raise CrossknowError(f"--per-token needs a local model (default, hf:, gguf:); {scorer.name} scores text "
                                 "in a tokenisation crossknow cannot see")
        done = self.done_keys()
        todo = sorted((s for s in sequences if sequence_key(at, s) not in done), key=lambda s: -len(s.text))
        size = self.batch_size * CHUNK_BATCHES
        for start in range(0, len(todo), size):
            chunk = todo[start : start + size]
            rows, failed = [], []
            for first in range(0, len(chunk), self.batch_size):
                batch = chunk[first : first + self.batch_size]
                results, reasons = score_isolating(scorer, [[sequence_request(s)] for s in batch], self.per_token)
                rows += [(batch[i], self._row(scorer, at, batch[i], one[0])) for i, one in sorted(results.items())]
                failed += [(batch[i], {"step": at.step, "checkpoint": at.checkpoint, "variant_id": batch[i].variant_id,
                                       "reason": why}) for i, why in sorted(reasons.items())]
            _commit(self.scored, STAGE_SCHEMA, at, rows)
            _commit(self.unscorable, UNSCORABLE_SCHEMA, at, failed)
            if on_progress:
                on_progress(len(chunk))

    def _row(self, scorer: Scorer, at: ModelPoint, sequence: TracedSequence, result: ScoreResult) -> dict:
        row = {
            "step": at.step, "checkpoint": at.checkpoint, "variant_id": sequence.variant_id,
            "source_id": sequence.source_id, "lang": sequence.lang, "method": sequence.method, "x": sequence.x,
            "y": sequence.y, "a": sequence.a, "n_tokens": result.n_tokens, "logprob_sum": result.logprob_sum,
            "loss": option_loss(Normalisation.MEAN_TOKEN, result.logprob_sum, result.n_tokens, 0, 0),
        }
        if self.per_token:
            assert result.token_logprobs is not None
            local: Any = scorer  # checked in `run`: a local scorer, with its tokenizer and encoder
            _, ids = local.encode_request(sequence_request(sequence))
            if len(ids) != result.n_tokens:
                raise CrossknowError(f"variant {sequence.variant_id!r}: {len(ids)} token ids for {result.n_tokens} "
                                     "scored tokens")
            spans = token_spans(local.tokenizer, sequence.text, ids, from_text=sequence.token_ids is None)
            row |= {"token_ids": spans.ids, "token_texts": spans.texts, "char_starts": spans.starts,
                    "char_ends": spans.ends, "token_losses": [-value for value in result.token_logprobs]}
        return row

    def read(self) -> pa.Table:
        """Every committed row, in commit order."""
        return self.scored.read(STAGE_SCHEMA)

    def read_unscorable(self) -> list[dict]:
        """Every unscorable variant with its reason, in commit order."""
        return self.unscorable.read(UNSCORABLE_SCHEMA).to_pylist()


def _commit(shards: ShardedTable, schema: pa.Schema, at: ModelPoint,
            entries: list[tuple[TracedSequence, dict]]) -> None:
    """Append the (sequence, row) `entries`, if any, as one shard keyed by `sequence_key`."""
    if entries:
        shards.append(pa.Table.from_pylist([row for _, row in entries], schema=schema),
                      [sequence_key(at, sequence) for sequence, _ in entries])


def run_sequence_loss(
    config: SequenceLossConfig, out: Path, on_progress: Callable[[int, int, str], None] | None = None,
    reuse_frozen: bool = True,
) -> pa.Table:
    """Score every sequence at every checkpoint into run directory `out`; return sequence_loss.parquet's table.

    `on_progress(sequences done, sequences total, checkpoint label)` is called after each committed shard;
    `reuse_frozen=False` runs every checkpoint whole (the same numbers, slower: for checking).
    """
    out = Path(out)
    checkpoints = discover_checkpoints(config.checkpoints.specs)
    variants = data_file(config.variants)
    sequences = read_sequences(variants)
    with RunDir(out) as run:
        run.open(config.model_dump(), {str(variants): file_sha256(variants)},
                 volatile=volatile_keys(type(config)), paths=("variants",), upgrade=type(config).recorded)
        stage = SequenceStage(run, config.batch_size, config.per_token)
        options = config.checkpoints.options(batch_size=config.batch_size)
        sweep_checkpoints(out, checkpoints, sequences, sequence_key, stage.done_keys(), options, stage.run,
                          reuse_frozen=reuse_frozen, prune=config.prune, on_progress=on_progress)
        return _write_tables(out, stage, sequences, config)


def _write_tables(out: Path, stage: SequenceStage, sequences: list[TracedSequence],
                  config: SequenceLossConfig) -> pa.Table:
    """sequence_loss.parquet, token_loss.parquet (with per_token) and invalid.jsonl from the stages."""
    unscorable = stage.read_unscorable()
    excluded = {row["variant_id"] for row in unscorable}
    table = stage.read()
    if excluded:
        table = table.filter(pc.invert(pc.is_in(table["variant_id"], pa.array(sorted(excluded), pa.string()))))
    table = table.sort_by([("step", "ascending"), ("variant_id", "ascending")]).combine_chunks()
    sequence_table = table.select(SEQUENCE_SCHEMA.names).cast(SEQUENCE_SCHEMA)
    atomic_write(out / SEQUENCE_FILE, lambda handle: pq.write_table(sequence_table, handle), binary=True)
    if config.per_token:
        tokens = token_table(table)
        atomic_write(out / TOKEN_FILE, lambda handle: pq.write_table(tokens, handle), binary=True)
    lines = {s.variant_id: s.line for s in sequences}
    write_invalid(out / "invalid.jsonl", [
        InvalidRecord(path=config.variants, line=lines.get(row["variant_id"]), field=None,
                      item_id=row["variant_id"], reason=f"unscorable at step {row['step']}: {row['reason']}")
        for row in unscorable])
    return sequence_table


def token_table(table: pa.Table) -> pa.Table:
    """The stage's per-token lists as TOKEN_SCHEMA rows (one per token), in the rows' order."""
    table = table.filter(pc.is_valid(table["token_ids"])).combine_chunks()
    lengths = pc.list_value_length(table["token_ids"]).to_numpy(zero_copy_only=False).astype(np.int64)
    parents = pa.array(np.repeat(np.arange(len(lengths)), lengths))
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    columns = {name: pc.take(table[name], parents) for name in ("step", "checkpoint", "variant_id", "lang")}
    columns["position"] = pa.array(np.arange(int(lengths.sum())) - starts, pa.int32())
    for name, source in (("token_id", "token_ids"), ("token_text", "token_texts"), ("char_start", "char_starts"),
                         ("char_end", "char_ends"), ("loss", "token_losses")):
        columns[name] = pc.list_flatten(table[source])
    return pa.table([columns[name] for name in TOKEN_SCHEMA.names], schema=TOKEN_SCHEMA)
