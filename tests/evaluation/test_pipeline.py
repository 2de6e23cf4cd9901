"""`run_evaluate` on real data with the real embedded model: scores, metrics, resume, config checks."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from importlib import resources
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from crossknow.data.formats import load_item_set
from crossknow.errors import CrossknowError, ModelSpecError
from crossknow.evaluation.pipeline import run_evaluate
from crossknow.evaluation.records import EvaluateConfig
from crossknow.models.registry import load_scorer

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
YORUBA = SHARED_DATA / "cross-lingual-pitfalls" / "Yoruba.json"
SAMPLE = Path(str(resources.files("crossknow") / "samples" / "sample.jsonl"))
COLUMNS = [
    "step", "checkpoint", "set", "condition", "item_id", "pair_id", "lang", "kind", "option_index", "is_answer",
    "logprob_sum", "n_tokens", "n_chars", "n_bytes", "greedy", "loss",
]
FLOATS = ("logprob_sum", "loss")


def _sample_records() -> list[dict]:
    return [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]


def _config(**overrides) -> EvaluateConfig:
    return EvaluateConfig(**({"model": "default", "data": "sample", "device": "cpu", "batch_size": 4} | overrides))


def _scorer_factory(scorer):
    return lambda spec, options: scorer


def _no_scorer(spec, options):
    raise AssertionError("the scorer must not be built: nothing is left to score")


class CountingScorer:
    """Delegates to a real scorer; counts calls and requests, and raises on call number `crash_on`."""

    def __init__(self, inner, crash_on: int | None = None):
        self.inner = inner
        self.name, self.model_id, self.dtype = inner.name, inner.model_id, inner.dtype
        self.crash_on = crash_on
        self.calls = 0
        self.requests = 0

    def score(self, requests, keep_token_logprobs=False):
        self.calls += 1
        if self.crash_on is not None and self.calls == self.crash_on:
            raise RuntimeError("simulated crash in the middle of a run")
        self.requests += len(requests)
        return self.inner.score(requests, keep_token_logprobs)


def _rows(path: Path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def _assert_same_scores(rows: list[dict], reference: list[dict], tolerance: float = 1e-6) -> None:
    assert [(r["item_id"], r["option_index"]) for r in rows] == [(r["item_id"], r["option_index"]) for r in reference]
    for row, ref in zip(rows, reference, strict=True):
        for column in COLUMNS:
            if column in FLOATS:
                assert row[column] == pytest.approx(ref[column], abs=tolerance), (row["item_id"], column)
            else:
                assert row[column] == ref[column], (row["item_id"], column)


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory, embedded_scorer):
    """An uninterrupted evaluation of the packaged sample: (run directory, returned metrics)."""
    out = tmp_path_factory.mktemp("clean") / "run"
    metrics = run_evaluate(_config(), out, make_scorer=_scorer_factory(embedded_scorer))
    return out, metrics


# ---- (a) metrics.json agrees with the scores table -------------------------------------------


def _recomputed_accuracy(rows: list[dict]) -> dict[str, dict[str, float]]:
    """Accuracy per normalisation and group, computed here from the raw scores table."""
    losses = {
        "mean_token": lambda r: -r["logprob_sum"] / r["n_tokens"],
        "sum": lambda r: -r["logprob_sum"],
        "per_char": lambda r: -r["logprob_sum"] / r["n_chars"],
        "per_byte": lambda r: -r["logprob_sum"] / r["n_bytes"],
    }
    by_item: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_item[row["item_id"]].append(row)
    hits: dict[str, dict[str, list[bool]]] = {norm: defaultdict(list) for norm in losses}
    for options in by_item.values():
        options.sort(key=lambda r: r["option_index"])
        lang, kind = options[0]["lang"], options[0]["kind"]
        for norm, loss in losses.items():
            values = [loss(r) for r in options]
            best = min(range(len(values)), key=lambda i: (values[i], i))  # ties: the lower index
            for group in ("all", f"lang={lang}", f"kind={kind}", f"lang={lang},kind={kind}"):
                hits[norm][group].append(options[best]["is_answer"])
    return {norm: {group: sum(v) / len(v) for group, v in groups.items()} for norm, groups in hits.items()}


def test_metrics_equal_recomputation_from_scores_table(clean_run):
    out, returned = clean_run
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    expected = _recomputed_accuracy(_rows(out / "scores.parquet"))
    groups = {"all", "lang=en", "lang=ja", "kind=cloze", "kind=question"} | {
        f"lang={lang},kind={kind}" for lang in ("en", "ja") for kind in ("cloze", "question")
    }
    for norm in ("mean_token", "sum", "per_char", "per_byte"):
        assert set(metrics["accuracy"][norm]) == groups
        for group in groups:
            assert metrics["accuracy"][norm][group] == pytest.approx(expected[norm][group]), (norm, group)
    # The sample: 6 facts x {en, ja} x {cloze, question}.
    assert metrics["n_items"]["all"] == 24
    assert metrics["n_items"]["lang=en"] == metrics["n_items"]["lang=ja"] == 12
    assert metrics["n_items"]["lang=ja,kind=cloze"] == 6
    assert metrics["n_invalid"] == 0
    assert metrics["rule"] == "adaxeval" and metrics["format"] == "jsonl"
    assert metrics["items_scored_this_run"] == 24
    assert returned.accuracy == metrics["accuracy"]


# ---- (b) scores.parquet holds every option with consistent numbers ---------------------------


def test_scores_table_shape_and_columns(clean_run):
    out, _ = clean_run
    table = pq.read_table(out / "scores.parquet")
    assert table.column_names == COLUMNS
    rows = table.to_pylist()
    assert len(rows) == 24 * 4
    assert len({(r["item_id"], r["option_index"]) for r in rows}) == 96

    records = {record["id"]: record for record in _sample_records()}
    assert {r["item_id"] for r in rows} == set(records)
    for row in rows:
        record = records[row["item_id"]]
        assert (row["lang"], row["kind"], row["pair_id"]) == (record["lang"], record["kind"], record["pair_id"])
        assert row["is_answer"] == (row["option_index"] == record["answer"])
        assert row["n_tokens"] >= 1
        assert row["logprob_sum"] < 0
        assert row["loss"] == pytest.approx(-row["logprob_sum"] / row["n_tokens"], rel=1e-12)
        # The scored text under the adaxeval rule: option + rest of the sentence (cloze), option (question).
        option = record["options"][row["option_index"]]
        text = option + record["prompt"].split("[BLANK]")[1] if row["kind"] == "cloze" else option
        assert row["n_chars"] == len(text)
        assert row["n_bytes"] == len(text.encode("utf-8"))
        assert row["n_bytes"] >= row["n_chars"]
        assert (row["n_bytes"] > row["n_chars"]) == (not text.isascii())
        if row["lang"] == "ja" and row["kind"] == "cloze":  # the rest of a Japanese sentence is never ASCII
            assert row["n_bytes"] > row["n_chars"]
    for record in records.values():
        assert sum(r["is_answer"] for r in rows if r["item_id"] == record["id"]) == 1


def _plain_logprob(scorer, context: str, continuation: str) -> tuple[float, int]:
    """Sum of the continuation's log-probabilities by one plain forward pass (DESIGN's boundary rule)."""
    import torch

    stripped = context.rstrip(" ")
    context, continuation = stripped, context[len(stripped):] + continuation
    ctx = scorer.tokenizer(context).input_ids
    whole = scorer.tokenizer(context + continuation).input_ids
    cont = whole[len(ctx):]
    with torch.inference_mode():
        logits = scorer.model(torch.tensor([ctx + cont])).logits[0].float()
    logprobs = torch.log_softmax(logits, dim=-1)
    total = sum(logprobs[len(ctx) - 1 + k, token].item() for k, token in enumerate(cont))
    return total, len(cont)


@pytest.mark.parametrize("item_id", ["en-cloze-capital-france", "ja-question-capital-france"])
def test_scores_match_a_plain_forward_pass(clean_run, embedded_scorer, item_id):
    """Each row holds its own option's numbers: recompute them without the pipeline or batching."""
    out, _ = clean_run
    record = next(r for r in _sample_records() if r["id"] == item_id)
    rows = [r for r in _rows(out / "scores.parquet") if r["item_id"] == item_id]
    assert len(rows) == len(record["options"])
    for row in rows:
        option = record["options"][row["option_index"]]
        if record["kind"] == "cloze":
            before, after = record["prompt"].split("[BLANK]")
            expected, n_tokens = _plain_logprob(embedded_scorer, before, option + after)
        else:
            expected, n_tokens = _plain_logprob(embedded_scorer, record["prompt"] + "\n", option)
        assert row["n_tokens"] == n_tokens
        assert row["logprob_sum"] == pytest.approx(expected, abs=2e-3)


# ---- (c) resume after a crash ----------------------------------------------------------------


def test_resume_after_crash_equals_uninterrupted_run(clean_run, embedded_scorer, tmp_path):
    reference_out, reference_metrics = clean_run
    out = tmp_path / "run"
    # one chunk (4 batches of 4 items, the 16 longest) commits, then the second scorer call dies
    crashing = CountingScorer(embedded_scorer, crash_on=2)
    with pytest.raises(RuntimeError, match="simulated crash"):
        run_evaluate(_config(), out, make_scorer=_scorer_factory(crashing))
    assert not (out / "scores.parquet").exists() and not (out / "metrics.json").exists()
    manifest = json.loads((out / "stages" / "scores" / "manifest.json").read_text())
    done = {key for shard in manifest["shards"] for key in shard["keys"]}
    assert len(done) == 16

    resumed = CountingScorer(embedded_scorer)
    metrics = run_evaluate(_config(), out, make_scorer=_scorer_factory(resumed))
    assert metrics.items_scored_this_run == 24 - len(done) == 8
    assert resumed.requests == 8 * 4  # the committed items were not scored again

    rows = _rows(out / "scores.parquet")
    assert len({(r["item_id"], r["option_index"]) for r in rows}) == len(rows) == 96
    _assert_same_scores(rows, _rows(reference_out / "scores.parquet"))
    for norm, groups in reference_metrics.accuracy.items():
        assert metrics.accuracy[norm] == pytest.approx(groups), norm
    assert metrics.n_items == reference_metrics.n_items


# ---- (d) a finished run is not scored again --------------------------------------------------


def test_rerun_of_finished_run_does_not_build_the_scorer(clean_run, tmp_path):
    reference_out, reference_metrics = clean_run
    out = tmp_path / "run"
    shutil.copytree(reference_out, out)
    metrics = run_evaluate(_config(batch_size=2), out, make_scorer=_no_scorer)  # batch size may change
    assert metrics.items_scored_this_run == 0
    assert metrics.accuracy == reference_metrics.accuracy
    assert metrics.model == reference_metrics.model
    _assert_same_scores(_rows(out / "scores.parquet"), _rows(reference_out / "scores.parquet"), tolerance=0)


# ---- (e) the directory belongs to one run ----------------------------------------------------


def test_same_out_with_another_model_raises(clean_run, tmp_path):
    reference_out, _ = clean_run
    out = tmp_path / "run"
    shutil.copytree(reference_out, out)
    before = (out / "metrics.json").read_bytes()
    with pytest.raises(CrossknowError, match="model"):
        run_evaluate(_config(model="hf:/elsewhere"), out, make_scorer=_no_scorer)
    assert (out / "metrics.json").read_bytes() == before


def test_same_out_with_another_data_file_raises(clean_run, tmp_path):
    reference_out, _ = clean_run
    out = tmp_path / "run"
    shutil.copytree(reference_out, out)
    other = tmp_path / "other.jsonl"
    shutil.copyfile(SAMPLE, other)
    with pytest.raises(CrossknowError, match="data"):
        run_evaluate(_config(data=str(other)), out, make_scorer=_no_scorer)


def test_same_out_with_edited_data_file_raises(embedded_scorer, tmp_path):
    data = tmp_path / "items.jsonl"
    shutil.copyfile(SAMPLE, data)
    out = tmp_path / "run"
    run_evaluate(_config(data=str(data), limit=2), out, make_scorer=_scorer_factory(embedded_scorer))
    lines = data.read_text(encoding="utf-8").splitlines(keepends=True)
    data.write_text("".join(lines[:-1]), encoding="utf-8")  # drop the last item: the first 2 are unchanged
    with pytest.raises(CrossknowError, match="changed"):
        run_evaluate(_config(data=str(data), limit=2), out, make_scorer=_no_scorer)


def test_mistyped_model_spec_does_not_lock_the_run_directory(embedded_scorer, tmp_path):
    out = tmp_path / "run"
    with pytest.raises(ModelSpecError):
        run_evaluate(_config(model="gemma", limit=2), out, make_scorer=load_scorer)
    assert not (out / "scores.parquet").exists() and not (out / "metrics.json").exists()
    metrics = run_evaluate(_config(limit=2), out, make_scorer=_scorer_factory(embedded_scorer))
    assert metrics.n_items["all"] == 2 and metrics.items_scored_this_run == 2


# ---- (f) Cross-Lingual Pitfalls: lm-eval rule, invalid pairs reported ------------------------


def _unscorable_positions(pairs: list[dict]) -> list[int]:
    """1-based positions of pairs whose answer is not among its choices, on either side."""
    return [
        position
        for position, pair in enumerate(pairs, start=1)
        if pair["answer"] not in pair["choices"] or pair["transanswer"] not in pair["transchoices"]
    ]


def test_pitfalls_real_file_with_limit(embedded_scorer, tmp_path):
    metrics = run_evaluate(
        _config(data=str(YORUBA), limit=1), tmp_path / "run", make_scorer=_scorer_factory(embedded_scorer)
    )
    pairs = json.loads(YORUBA.read_text(encoding="utf-8"))
    assert _unscorable_positions(pairs[:1]) == []
    assert metrics.rule == "lm-eval" and metrics.format == "pitfalls"
    assert metrics.n_items == {
        "all": 2, "kind=question": 2, "lang=en": 1, "lang=en,kind=question": 1, "lang=yo": 1,
        "lang=yo,kind=question": 1,
    }
    assert metrics.n_invalid == len(load_item_set(YORUBA, limit=1).invalid) == 0
    rows = _rows(tmp_path / "run" / "scores.parquet")
    assert {r["pair_id"] for r in rows} == {"Yoruba:0"}
    assert len(rows) == len(pairs[0]["choices"]) + len(pairs[0]["transchoices"])
    for lang, choices, answer in (("en", "choices", "answer"), ("yo", "transchoices", "transanswer")):
        side = [r for r in rows if r["lang"] == lang]
        assert [r["is_answer"] for r in side] == [c == pairs[0][answer] for c in pairs[0][choices]]
        # lm-eval's per-character normalisation counts the choice itself.
        assert [r["n_chars"] for r in side] == [len(c) for c in pairs[0][choices]]
    assert (tmp_path / "run" / "invalid.jsonl").read_text() == ""


def test_pitfalls_invalid_pairs_are_reported_not_scored(embedded_scorer, tmp_path):
    """Real Yoruba pairs: the first unscorable ones of the release, then the (short) first pair."""
    pairs = json.loads(YORUBA.read_text(encoding="utf-8"))
    bad = [position - 1 for position in _unscorable_positions(pairs[:40])][:3]
    assert len(bad) == 3, "the release has unscorable pairs among its first 40"
    data = tmp_path / "Yoruba.json"  # the stem names the language
    data.write_text(json.dumps([pairs[i] for i in bad] + [pairs[0]], ensure_ascii=False), encoding="utf-8")

    out = tmp_path / "run"
    metrics = run_evaluate(_config(data=str(data), limit=1), out, make_scorer=_scorer_factory(embedded_scorer))
    assert metrics.n_invalid == 3
    assert metrics.n_items["all"] == 2
    records = [json.loads(line) for line in (out / "invalid.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["line"] for r in records] == [1, 2, 3]
    for record, index in zip(records, bad, strict=True):
        assert record["path"] == str(data)
        side = "transanswer" if pairs[index]["answer"] in pairs[index]["choices"] else "answer"
        assert record["field"] == side
        assert pairs[index][side] in record["reason"]
    rows = _rows(out / "scores.parquet")
    assert {r["item_id"] for r in rows} == {"en:3", "yo:3"}


def test_file_without_usable_items_is_a_clear_error(tmp_path):
    pairs = json.loads(YORUBA.read_text(encoding="utf-8"))
    bad = [position - 1 for position in _unscorable_positions(pairs[:40])][:2]
    data = tmp_path / "Yoruba.json"
    data.write_text(json.dumps([pairs[i] for i in bad], ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "run"
    with pytest.raises(CrossknowError, match="no usable items"):
        run_evaluate(_config(data=str(data)), out, make_scorer=_no_scorer)
    assert not (out / "metrics.json").exists() and not (out / "scores.parquet").exists()


# ---- (g) resume keys: a path written two ways is one run; --limit may grow; unscorable items --------------


def test_a_relative_then_absolute_data_path_is_the_same_run(embedded_scorer, tmp_path, monkeypatch):
    shutil.copyfile(SAMPLE, tmp_path / "items.jsonl")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"
    run_evaluate(_config(data="items.jsonl", limit=2), out, make_scorer=_scorer_factory(embedded_scorer))
    again = run_evaluate(_config(data=str(tmp_path / "items.jsonl"), limit=2), out, make_scorer=_no_scorer)
    assert again.items_scored_this_run == 0 and again.n_items["all"] == 2


def test_the_limit_can_be_raised_on_resume_and_only_new_items_are_scored(embedded_scorer, tmp_path):
    out = tmp_path / "run"
    run_evaluate(_config(limit=2), out, make_scorer=_scorer_factory(embedded_scorer))
    counting = CountingScorer(embedded_scorer)
    metrics = run_evaluate(_config(limit=5), out, make_scorer=_scorer_factory(counting))
    assert metrics.items_scored_this_run == 3 and metrics.n_items["all"] == 5
    records = _sample_records()
    assert counting.requests == sum(len(record["options"]) for record in records[2:5])


class RefusingScorer(CountingScorer):
    """The real scorer, except that it refuses (as a backend refuses an item too long for the model) every
    request whose continuation holds `marker`."""

    def __init__(self, inner, marker: str):
        super().__init__(inner)
        self.marker = marker

    def score(self, requests, keep_token_logprobs=False):
        from crossknow.errors import UnscorableRequest

        for index, request in enumerate(requests):
            if self.marker in request.continuation:
                raise UnscorableRequest(f"{len(request.continuation)} characters: over the model's positions", index)
        return super().score(requests, keep_token_logprobs)


def test_an_unscorable_item_is_listed_in_invalid_jsonl_and_the_run_goes_on(embedded_scorer, tmp_path):
    records = _sample_records()[:4]
    victim = records[1]
    victim["options"][0] = "Lutetia"  # an option no other item has
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    out = tmp_path / "run"
    metrics = run_evaluate(_config(data=str(data)), out,
                           make_scorer=_scorer_factory(RefusingScorer(embedded_scorer, "Lutetia")))
    assert metrics.n_unscorable == 1 and metrics.n_items["all"] == 3
    [line] = (out / "invalid.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(line)
    assert record["item_id"] == victim["id"] and "over the model's positions" in record["reason"]
    assert victim["id"] not in {row["item_id"] for row in _rows(out / "scores.parquet")}
    again = run_evaluate(_config(data=str(data)), out, make_scorer=_no_scorer)  # decided: not tried again
    assert again.n_unscorable == 1


# ---- bfloat16 with float32's decisions --------------------------------------------------------


@pytest.mark.slow
def test_bfloat16_with_float32_decisions_predicts_as_float32(clean_run, embedded_scorer, tmp_path):
    """Every item's prediction under every normalisation equals the float32 run's; the items scored again
    carry float32's very numbers, the others bfloat16's own."""
    import pandas as pd

    from crossknow.scoring.metrics import item_predictions
    from crossknow.store.run_dir import RunDir

    def make(spec, options):  # the float32 scorer is the suite's loaded one
        return embedded_scorer if options.dtype == "float32" else load_scorer(spec, options)

    out = tmp_path / "run"
    metrics = run_evaluate(_config(dtype="bfloat16", limit=12), out, make_scorer=make)
    reference, rows = _rows(clean_run[0] / "scores.parquet"), _rows(out / "scores.parquet")
    ours = item_predictions(pd.DataFrame(rows)).set_index("item_id")
    theirs = item_predictions(pd.DataFrame(reference)).set_index("item_id").loc[ours.index]
    assert len(ours) == 12
    pred_columns = [c for c in ours.columns if c.startswith("pred_")]
    assert ours[pred_columns].sort_index().equals(theirs[pred_columns].sort_index())
    rescored = {key.split("\t")[2] for key in RunDir(out).stage("float32_rescored").done_keys()}
    assert metrics.items_rescored_float32 == len(rescored) < len(ours)
    by_key = {(r["item_id"], r["option_index"]): r["logprob_sum"] for r in reference}
    for row in rows:
        if row["item_id"] in rescored:
            # float32, batched otherwise than the reference run: the same numbers but for summation order
            assert row["logprob_sum"] == pytest.approx(by_key[row["item_id"], row["option_index"]], abs=1e-4)
    assert any(abs(r["logprob_sum"] - by_key[r["item_id"], r["option_index"]]) > 1e-3
               for r in rows if r["item_id"] not in rescored)  # the rest are bfloat16's own numbers


def test_float32_decisions_apply_to_low_precision_only():
    from crossknow.evaluation.pipeline import float32_scorer
    from crossknow.models.registry import ModelOptions

    class Dtype:
        def __init__(self, dtype):
            self.dtype = dtype

    built = []
    make = lambda spec, options: built.append(options.dtype) or Dtype(options.dtype)  # noqa: E731
    assert float32_scorer(_config(), ModelOptions(), Dtype("float32"), make) is None
    assert float32_scorer(_config(float32_decisions=False), ModelOptions(), Dtype("bfloat16"), make) is None
    assert float32_scorer(_config(), ModelOptions(), Dtype("server"), make) is None
    factory = float32_scorer(_config(), ModelOptions(dtype="bfloat16"), Dtype("bfloat16"), make)
    assert factory() is factory() and built == ["float32"]  # built on first use, once
