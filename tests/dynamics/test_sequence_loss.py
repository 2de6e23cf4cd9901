"""`crossknow trace-sequences`: reading the sequences, the losses against a plain forward pass of the embedded
model, the per-token table, and resuming a run cut short."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import torch

from crossknow.data.sequence_variants import LEVELS
from crossknow.dynamics.sequence_inputs import SequenceLossConfig, read_sequences
from crossknow.dynamics.sequence_loss import run_sequence_loss
from crossknow.dynamics.token_spans import token_spans
from crossknow.errors import CrossknowError, InputError
from crossknow.models import sweep_scorers
from tests.training.tiny_run import TinyTrainRun

ORIGINAL = "Insulin lowers blood sugar. It is made in the pancreas."
"""A short English sequence (the demo corpus's first fact, in other words)."""


def write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def variant(id_: str, method: str, text: str, **fields: Any) -> dict[str, Any]:
    """A variants.jsonl line as `crossknow perturb` writes it (a `SequenceVariant`)."""
    return {"id": id_, "source_id": "s1", "lang": "en", "method": method, "level": LEVELS.get(method, "sentence"),
            "x": None, "y": None, "a": None, "text": text, "token_ids": None, "tokenizer": "default",
            "edit_distance": 0, "seed": 0} | fields


# ---- reading --------------------------------------------------------------------------------------------------


def test_a_corpus_file_is_read_as_originals_with_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text(json.dumps({"id": "d1", "lang": "en", "text": "One."}) + "\n\n"
                    + json.dumps({"id": "d2", "lang": "ja", "text": "二つ。", "metadata": {"pair_id": "p"}}) + "\n",
                    encoding="utf-8")
    first, second = read_sequences(path)
    assert (first.variant_id, first.source_id, first.method, first.text, first.line) == ("d1", "d1", "original",
                                                                                         "One.", 1)
    assert (second.variant_id, second.lang, second.token_ids, second.line) == ("d2", "ja", None, 3)


@pytest.mark.parametrize(("change", "where"), [
    ({"token_ids": [5, "7"]}, "line 2: field 'token_ids[1]'"),
    ({"token_ids": [5, -1]}, "line 2: field 'token_ids[1]'"),
    ({"source_id": None}, "line 2: field 'source_id': Input should be a valid string"),
    ({"x": "8"}, "line 2: field 'x': Input should be a valid integer"),
    ({"tokenizer": None}, "line 2: field 'tokenizer': Input should be a valid string"),
    ({"method": "shuffle"}, "line 2: field 'method': Input should be 'original', 'mask'"),
    ({"text": "  "}, "line 2: field 'text': the text is empty"),
    ({"id": "v1"}, "line 2: field 'id': duplicate variant id 'v1', first used on line 1"),
    ({"method": "original", "level": "none", "x": 50}, "line 2: field 'x': method 'original' takes no x"),
    ({"level": "sentence"}, "line 2: field 'level': level 'sentence' does not fit method 'mask'"),
    ({"y": 3}, "line 2: field 'y': method 'mask' takes no y"),
    ({"token_ids": []}, "line 2: field 'token_ids': token_ids: an empty token sequence"),
    ({"lang": "english"}, "line 2: field 'lang': 'english' is not a language tag"),
])
def test_a_malformed_variant_names_its_file_line_and_field(tmp_path: Path, change: dict, where: str) -> None:
    path = write_lines(tmp_path / "variants.jsonl", [variant("v1", "original", ORIGINAL),
                                                     variant("v2", "mask", ORIGINAL, x=8) | change])
    with pytest.raises(InputError, match="variants.jsonl, " + where.replace("(", r"\(").replace("[", r"\[")):
        read_sequences(path)


# ---- token spans ----------------------------------------------------------------------------------------------


def test_token_spans_of_a_text_and_of_byte_tokens(embedded_scorer: Any) -> None:
    tokenizer = embedded_scorer.tokenizer
    text = "Hello world, the cat."
    ids = tokenizer(text).input_ids[1:]  # after BOS
    spans = token_spans(tokenizer, text, ids, from_text=True)
    covered = [text[start:end] for start, end in zip(spans.starts, spans.ends, strict=True)]
    assert covered == ["Hello", " world", ",", " the", " cat", "."]  # by hand: a word's token holds its space
    assert [entry.replace("▁", " ") for entry in spans.texts] == covered

    # '日本' + the three UTF-8 bytes of '語' as byte tokens + ' ok': the first byte token carries the character,
    # the other two cover none (their prefixes decode to replacement characters).
    byte_ids = [tokenizer.convert_tokens_to_ids(f"<0x{byte:02X}>") for byte in "語".encode()]
    ids = tokenizer("日本", add_special_tokens=False).input_ids + byte_ids + tokenizer(
        " ok", add_special_tokens=False).input_ids
    assert len(ids) == 5
    spans = token_spans(tokenizer, "日本語 ok", ids, from_text=False)
    assert list(zip(spans.starts, spans.ends, strict=True)) == [(0, 2), (2, 3), (3, 3), (3, 3), (3, 6)]
    assert spans.texts[1:4] == ["<0xE8>", "<0xAA>", "<0x9E>"]
    # ids that do not decode to the variant's text: no span is claimed
    assert token_spans(tokenizer, "something else", ids, from_text=False).starts == [None] * 5


# ---- losses against a plain forward pass ------------------------------------------------------------------------


def plain_token_losses(model: Any, bos: int, ids: list[int]) -> list[float]:
    """-log p(token | BOS and the tokens before it) for each of `ids`, from one plain forward pass of the whole
    sequence and a float64 log-softmax over the full vocabulary."""
    with torch.no_grad():
        logits = model(torch.tensor([[bos, *ids]])).logits[0].double()
    logprobs = torch.log_softmax(logits, dim=-1)
    return [-logprobs[position, token].item() for position, token in enumerate(ids)]


@pytest.mark.slow
def test_sequence_and_token_losses_equal_a_plain_forward_pass(embedded_scorer: Any, tmp_path: Path) -> None:
    tokenizer, model = embedded_scorer.tokenizer, embedded_scorer.model
    text_ids = tokenizer(ORIGINAL, add_special_tokens=False).input_ids
    masked = list(text_ids)
    masked[2] = masked[6] = tokenizer.unk_token_id  # a token-level variant: two tokens masked
    variants = write_lines(tmp_path / "variants.jsonl", [
        variant("s1", "original", ORIGINAL),
        variant("s1-mask", "mask", tokenizer.decode(masked), x=20, token_ids=masked),
        variant("s1-bad", "random", "?", x=2, token_ids=[5, 10**9]),  # no such token: unscorable
    ])
    config = SequenceLossConfig(checkpoints=["default"], variants=str(variants), per_token=True, batch_size=2,
                                device="cpu")
    table = run_sequence_loss(config, tmp_path / "run").to_pylist()

    rows = {row["variant_id"]: row for row in table}
    assert set(rows) == {"s1", "s1-mask"}
    tokens = pq.read_table(tmp_path / "run" / "token_loss.parquet").to_pylist()
    for variant_id, method, ids in (("s1", "original", text_ids), ("s1-mask", "mask", masked)):
        expected = plain_token_losses(model, tokenizer.bos_token_id, ids)
        row = rows[variant_id]
        assert (row["step"], row["n_tokens"], row["method"], row["source_id"]) == (0, len(ids), method, "s1")
        assert row["loss"] == pytest.approx(sum(expected) / len(expected), abs=1e-4)
        mine = sorted((t for t in tokens if t["variant_id"] == variant_id), key=lambda t: t["position"])
        assert [t["token_id"] for t in mine] == ids
        assert [t["loss"] for t in mine] == pytest.approx(expected, abs=1e-3)
        assert sum(t["loss"] for t in mine) == pytest.approx(-row["logprob_sum"], abs=1e-6)
    original_tokens = [t for t in tokens if t["variant_id"] == "s1"]
    assert "".join(ORIGINAL[t["char_start"]:t["char_end"]] for t in original_tokens) == ORIGINAL
    [invalid] = [json.loads(line) for line in (tmp_path / "run" / "invalid.jsonl").read_text().splitlines()]
    assert (invalid["item_id"], invalid["line"]) == ("s1-bad", 3) and "vocabulary" in invalid["reason"]


# ---- resuming ---------------------------------------------------------------------------------------------------


def manifest(run: Path) -> list[dict[str, Any]]:
    return json.loads((run / "stages" / "sequences" / "manifest.json").read_text(encoding="utf-8"))["shards"]


def two_checkpoints(train: TinyTrainRun) -> list[str]:
    return [f"{step}={train.out / 'checkpoints' / f'checkpoint-{step}'}" for step in (2, 4)]


class Interrupt(Exception):
    """Raised from the progress callback: the run stops between two commits, as after Ctrl-C."""


def keyed(rows: list[dict[str, Any]]) -> dict[tuple[int, str], dict[str, Any]]:
    result = {(row["step"], row["variant_id"]): row for row in rows}
    assert len(result) == len(rows), "duplicate rows"
    return result


@pytest.mark.slow
def test_an_interrupted_or_killed_run_resumes_to_the_same_table(
    random_train_run: TinyTrainRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The checkpoints of the random Gemma 3's run (resuming is machinery: any model shows it). The first sentence
    # of each of the six training documents, read as originals from a corpus file; batch size 1 makes chunks of 4
    # sequences: two shards per checkpoint.
    documents = [json.loads(line) for line in random_train_run.corpus.read_text(encoding="utf-8").splitlines()]
    corpus = write_lines(tmp_path / "corpus.jsonl", [{"id": d["id"], "lang": d["lang"],
                                                      "text": d["text"].split(". ")[0] + "."} for d in documents])
    config = SequenceLossConfig(checkpoints=two_checkpoints(random_train_run), variants=str(corpus), batch_size=1,
                                device="cpu")
    whole = run_sequence_loss(config, tmp_path / "whole").to_pylist()
    assert len(keyed(whole)) == 12 and len(manifest(tmp_path / "whole")) == 4

    def stop_after_first(done: int, total: int, label: str) -> None:
        raise Interrupt

    with pytest.raises(Interrupt):
        run_sequence_loss(config, tmp_path / "cut", stop_after_first)
    assert len(manifest(tmp_path / "cut")) == 1
    resumed = run_sequence_loss(config, tmp_path / "cut").to_pylist()
    assert keyed(resumed).keys() == keyed(whole).keys()
    for key, row in keyed(whole).items():
        assert keyed(resumed)[key]["loss"] == pytest.approx(row["loss"], abs=1e-6), key

    # A kill between writing the last shard and naming it in the manifest: the shard is scored again, once.
    killed = shutil.copytree(tmp_path / "whole", tmp_path / "killed")
    shards = manifest(killed)
    (killed / "stages" / "sequences" / "manifest.json").write_text(json.dumps({"shards": shards[:-1]}))
    (killed / "sequence_loss.parquet").unlink()
    again = run_sequence_loss(config, killed).to_pylist()
    assert manifest(killed) == shards
    assert keyed(again).keys() == keyed(whole).keys()

    # A finished run loads no model and changes nothing.
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"a model was loaded: {args}")

    monkeypatch.setattr(sweep_scorers, "load_scorer", refuse)
    assert run_sequence_loss(config, tmp_path / "whole").to_pylist() == whole
    assert manifest(tmp_path / "whole") == shards


def test_the_command_reads_its_options_and_stops_at_bad_input_before_any_model_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from crossknow.cli.app import app

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"a model was loaded: {args}")

    monkeypatch.setattr(sweep_scorers, "load_scorer", refuse)
    variants = write_lines(tmp_path / "variants.jsonl", [variant("v1", "mask", ORIGINAL, x=8, token_ids=[5, "x"])])
    command = ["trace-sequences", "--checkpoints", "default", "--variants", str(variants), "--out", str(tmp_path / "o"),
               "--per-token", "--batch-size", "2"]
    with pytest.raises(InputError, match=r"variants.jsonl, line 1: field 'token_ids\[1\]'"):
        CliRunner().invoke(app, command, catch_exceptions=False)
    assert not (tmp_path / "o").exists()
    result = CliRunner().invoke(app, ["trace-sequences", "--help"])
    assert result.exit_code == 0 and "--per-token" in result.output and "--variants" in result.output
    assert "--pos-loss" in result.output  # Fig. 11's POS panel: absolute (the paper's) or relative
    with pytest.raises(CrossknowError, match="--pos-loss must be absolute or relative, got 'sideways'"):
        CliRunner().invoke(app, [*command[:7], "--pos-loss", "sideways"], catch_exceptions=False)
    assert not (tmp_path / "o").exists()


def test_a_server_backend_refuses_token_id_sequences_before_sending_anything() -> None:
    from crossknow.errors import CrossknowError
    from crossknow.models.openai_scorer import OpenAIScorer
    from crossknow.models.protocol import ScoreRequest

    scorer = OpenAIScorer("m", base_url="http://127.0.0.1:9/v1")  # port 9: nothing listens; nothing is sent
    with pytest.raises(CrossknowError, match="token-id continuations .* need a local model"):
        scorer.score([ScoreRequest("", "text", continuation_ids=(5, 6))])
