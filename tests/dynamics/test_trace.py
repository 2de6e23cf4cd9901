"""`run_trace` over the tiny training run (base model, checkpoint-2, checkpoint-4) on the first 8 demo items,
with the real embedded model; plus condition labels, set loading and the training-log copy."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crossknow.data.formats import load_item_set
from crossknow.data.schemas import MCItem
from crossknow.dynamics.trace import LINK_FIELDS, condition_of, copy_training_record, load_sets, run_trace
from crossknow.errors import CrossknowError
from crossknow.models import sweep_scorers
from crossknow.scoring.rules import option_requests
from crossknow.scoring.stage import SCORES_SCHEMA
from crossknow.training.frozen_shard import FROZEN_FILE, TRAINED_FILE
from tests.training.tiny_run import TinyTraceRun, TinyTrainRun, write_items

CONDITION = {
    ("en", "cloze"): "memorisation",
    ("en", "question"): "intralingual",
    ("ja", "question"): "interlingual",
    ("ja", "cloze"): "interlingual-cloze",
}
"""Conditions of section 4 for a model trained in English: cloze items in the training language test
memorisation, paraphrased questions intralingual generalisation, and the Japanese items interlingual."""

KEY = ("step", "set", "item_id", "option_index")


def item_records(path: Path) -> dict[str, dict[str, Any]]:
    """The items file's records by id."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return {record["id"]: record for record in records}


def manifest(run: Path) -> list[dict[str, Any]]:
    """The trace stage's committed shards."""
    return json.loads((run / "stages" / "scores" / "manifest.json").read_text(encoding="utf-8"))["shards"]


def rows_by_key(table: Any) -> dict[tuple, dict[str, Any]]:
    """Trace rows keyed by (step, set, item_id, option_index); fails on a duplicate key."""
    rows = table.to_pylist()
    keyed = {tuple(row[k] for k in KEY): row for row in rows}
    assert len(keyed) == len(rows), "duplicate rows"
    return keyed


def assert_same_table(table: Any, expected: Any, tolerance: float = 0.0) -> None:
    """Same keys and values; float columns within `tolerance`."""
    got, want = rows_by_key(table), rows_by_key(expected)
    assert got.keys() == want.keys()
    for key, row in want.items():
        for column, value in row.items():
            if isinstance(value, float):
                assert got[key][column] == pytest.approx(value, abs=tolerance), (key, column)
            else:
                assert got[key][column] == value, (key, column)


def test_the_trace_covers_every_checkpoint_item_and_option(tiny_trace_run: TinyTraceRun) -> None:
    table = pq.read_table(tiny_trace_run.out / "trace.parquet")
    assert table.schema == pa.schema([*SCORES_SCHEMA, *LINK_FIELDS])  # the demo items have no pairing: nulls
    assert set(table["partner_lang"].to_pylist()) == {None}
    assert table.equals(tiny_trace_run.table)
    items = item_records(tiny_trace_run.items)
    expected = {(step, "items", item_id, option)
                for step in (0, 2, 4) for item_id, record in items.items() for option in range(len(record["options"]))}
    assert set(rows_by_key(table)) == expected
    assert table.num_rows == 3 * 8 * 4
    labels = {row["step"]: row["checkpoint"] for row in table.to_pylist()}
    assert labels == {0: "base (default)", 2: "checkpoint-2", 4: "checkpoint-4"}


def test_rows_carry_the_items_conditions_and_answers(tiny_trace_run: TinyTraceRun) -> None:
    items = item_records(tiny_trace_run.items)
    rows = tiny_trace_run.table.to_pylist()
    for row in rows:
        record = items[row["item_id"]]
        assert row["condition"] == CONDITION[(record["lang"], record["kind"])], row
        assert (row["lang"], row["kind"], row["pair_id"]) == (record["lang"], record["kind"], record["pair_id"])
        assert row["is_answer"] == (row["option_index"] == record["answer"])
    assert {row["condition"] for row in rows} == set(CONDITION.values())


def test_step_0_is_the_base_model_scored_directly(tiny_trace_run: TinyTraceRun, embedded_scorer: Any) -> None:
    items = [item for item in load_item_set(tiny_trace_run.items).items]
    rows = rows_by_key(tiny_trace_run.table)
    requests = [(item, index, option.request) for item in items
                for index, option in enumerate(option_requests(item, "adaxeval"))]
    results = embedded_scorer.score([request for _, _, request in requests])
    for (item, index, _), result in zip(requests, results, strict=True):
        row = rows[(0, "items", item.id, index)]
        assert row["n_tokens"] == result.n_tokens
        assert row["loss"] == pytest.approx(-result.logprob_sum / result.n_tokens, abs=1e-4), (item.id, index)
        assert row["logprob_sum"] == pytest.approx(result.logprob_sum, abs=1e-4 * result.n_tokens)


def test_training_moved_the_losses_and_memorisation_gained_most(tiny_trace_run: TinyTraceRun) -> None:
    rows = rows_by_key(tiny_trace_run.table)
    for step in (2, 4):
        moved = [abs(rows[(step, *key[1:])]["loss"] - row["loss"]) for key, row in rows.items() if key[0] == 0]
        assert max(moved) > 1e-2, step
    # The tiny run trained on the English abstracts of f01 and f02, which hold the English cloze sentences
    # verbatim: their answers' loss must fall.
    answers = {key: row for key, row in rows.items() if row["is_answer"] and row["condition"] == "memorisation"}
    assert len(answers) == 3 * 2
    for key, row in answers.items():
        if key[0] == 4:
            assert row["loss"] < answers[(0, *key[1:])]["loss"], key


def test_checkpoints_json_records_each_checkpoints_weights(
    tiny_trace_run: TinyTraceRun, tiny_train_run: TinyTrainRun, embedded_checkpoint_dir: Path
) -> None:
    recorded = json.loads((tiny_trace_run.out / "checkpoints.json").read_text(encoding="utf-8"))
    assert set(recorded) == {"0", "2", "4"}
    base = hashlib.sha256((embedded_checkpoint_dir / "model.safetensors").read_bytes()).hexdigest()
    assert recorded["0"] == {"spec": "default", "label": "base (default)", "weights": f"model.safetensors:{base}"}
    for step in (2, 4):
        path = tiny_train_run.out / "checkpoints" / f"checkpoint-{step}"
        weights = ",".join(f"{name}:{hashlib.sha256((path / name).read_bytes()).hexdigest()}"
                           for name in sorted([FROZEN_FILE, TRAINED_FILE]))  # each weight file, by name
        assert recorded[str(step)] == {"spec": f"hf:{path}", "label": f"checkpoint-{step}", "weights": weights}


def forbid_model_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any model load inside run_trace fail the test."""
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"a model was loaded: {args}")

    monkeypatch.setattr(sweep_scorers, "load_scorer", refuse)


def test_running_again_scores_nothing_and_gives_the_same_table(
    tiny_trace_run: TinyTraceRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = manifest(tiny_trace_run.out)
    forbid_model_loads(monkeypatch)
    again = run_trace(tiny_trace_run.config.model_copy(update={"batch_size": 3}), tiny_trace_run.out)
    assert manifest(tiny_trace_run.out) == before
    assert again.equals(tiny_trace_run.table)
    assert pq.read_table(tiny_trace_run.out / "trace.parquet").equals(tiny_trace_run.table)


def test_another_rule_on_the_same_directory_is_refused(tiny_trace_run: TinyTraceRun) -> None:
    with pytest.raises(CrossknowError, match=r"another config \(rule: 'adaxeval' -> 'lm-eval'\)"):
        run_trace(tiny_trace_run.config.model_copy(update={"rule": "lm-eval"}), tiny_trace_run.out)


def test_a_trace_cut_short_before_its_last_shard_was_committed_resumes(
    tiny_trace_run: TinyTraceRun, tmp_path: Path
) -> None:
    # The state a kill leaves between writing the last shard and committing it to the manifest.
    run = shutil.copytree(tiny_trace_run.out, tmp_path / "run")
    shards = manifest(run)
    lost = shards[-1]
    assert (run / "stages" / "scores" / lost["file"]).exists()
    (run / "stages" / "scores" / "manifest.json").write_text(json.dumps({"shards": shards[:-1]}), encoding="utf-8")
    (run / "trace.parquet").unlink()

    progress: list[tuple[int, int, str]] = []
    table = run_trace(tiny_trace_run.config, run, lambda done, total, label: progress.append((done, total, label)))

    assert manifest(run) == shards  # exactly the lost shard again: same file, keys and rows
    assert progress == [(24, 24, "checkpoint-4")]
    assert_same_table(table, tiny_trace_run.table, tolerance=1e-6)
    assert_same_table(pq.read_table(run / "trace.parquet"), tiny_trace_run.table, tolerance=1e-6)


def test_a_checkpoint_whose_weights_changed_is_refused(tiny_trace_run: TinyTraceRun, tmp_path: Path) -> None:
    run = shutil.copytree(tiny_trace_run.out, tmp_path / "run")
    shards = manifest(run)
    kept = [shard for shard in shards if not shard["keys"][0].startswith("4\t")]
    assert len(kept) < len(shards)
    (run / "stages" / "scores" / "manifest.json").write_text(json.dumps({"shards": kept}), encoding="utf-8")
    recorded = json.loads((run / "checkpoints.json").read_text(encoding="utf-8"))
    recorded["4"]["weights"] = "model.safetensors:" + "0" * 64  # as if checkpoint-4 had been trained again
    (run / "checkpoints.json").write_text(json.dumps(recorded), encoding="utf-8")
    with pytest.raises(CrossknowError, match="checkpoint at step 4 changed"):
        run_trace(tiny_trace_run.config, run)


def mc_item(lang: str, kind: str) -> MCItem:
    """A minimal item of `lang` and `kind`."""
    prompt = "The answer is [BLANK]." if kind == "cloze" else "What is the answer?"
    return MCItem(id=f"{lang}-{kind}", lang=lang, kind=kind, prompt=prompt, options=["a", "b"], answer=0)


@pytest.mark.parametrize(("lang", "kind"), list(CONDITION))
def test_condition_of(lang: str, kind: str) -> None:
    assert condition_of(mc_item(lang, kind), "en") == CONDITION[(lang, kind)]


def test_condition_of_follows_the_training_language() -> None:
    assert condition_of(mc_item("ja", "cloze"), "ja") == "memorisation"
    assert condition_of(mc_item("ja", "question"), "ja") == "intralingual"
    assert condition_of(mc_item("en", "question"), "ja") == "interlingual"
    assert condition_of(mc_item("en", "cloze"), "ja") == "interlingual-cloze"


def test_load_sets_labels_and_errors(tmp_path: Path) -> None:
    items = write_items(tmp_path / "items.jsonl", 8)
    (found,) = load_sets([str(items)], "en")
    assert found.name == "items" and len(found.items) == 8
    assert found.conditions == [CONDITION[(i.lang, i.kind)] for i in found.items]
    (labelled,) = load_sets([f"intralingual={items}"], "en")
    assert labelled.conditions == ["intralingual"] * 8
    odd = write_items(tmp_path / "a=b.jsonl", 4)  # an existing file whose name holds '=' is a file
    assert load_sets([str(odd)], "en")[0].name == "a=b"
    with pytest.raises(CrossknowError, match="file not found: .*absent.jsonl"):
        load_sets([str(tmp_path / "absent.jsonl")], "en")
    (tmp_path / "other").mkdir()
    same_stem = write_items(tmp_path / "other" / "items.jsonl", 4)  # generate's en/x.jsonl and ja/x.jsonl
    assert [s.name for s in load_sets([str(items), str(same_stem)], "en")] == [f"{tmp_path.name}/items", "other/items"]
    for twin in ("a", "b"):
        (tmp_path / twin / "other").mkdir(parents=True)
        write_items(tmp_path / twin / "other" / "items.jsonl", 4)
    with pytest.raises(CrossknowError, match="share a name"):
        load_sets([str(tmp_path / twin / "other" / "items.jsonl") for twin in ("a", "b")], "en")


def test_copy_training_record_copies_the_one_training_log_and_config(
    tiny_train_run: TinyTrainRun, tmp_path: Path
) -> None:
    copy_training_record([str(tiny_train_run.out), "default"], tmp_path)
    assert (tmp_path / "train_log.parquet").read_bytes() == (tiny_train_run.out / "train_log.parquet").read_bytes()
    assert (tmp_path / "train_config.yaml").read_bytes() == (tiny_train_run.out / "config.yaml").read_bytes()
    copy_training_record(["default"], tmp_path / "none")
    assert not (tmp_path / "none").exists()
    twin = shutil.copytree(tiny_train_run.out, tmp_path / "twin", ignore=shutil.ignore_patterns("checkpoints"))
    copy_training_record([str(tiny_train_run.out), str(twin)], tmp_path / "two")
    assert not (tmp_path / "two").exists()

@pytest.mark.slow
def test_the_lm_eval_rule_reports_lm_evals_acc_and_acc_norm(tiny_trace_run: TinyTraceRun, tmp_path: Path) -> None:
    """Under --rule lm-eval the trace's `loss` is -sum (acc) and accuracy.json holds acc_norm (sum / characters
    of the choice), recomputed here by hand from the rows and the items file."""
    from crossknow.report.run_report import accuracy_lines, rebuild_report

    shutil.copy(tiny_trace_run.items, tmp_path / "items.jsonl")
    config = tiny_trace_run.config.model_copy(update={"data": [str(tmp_path / "items.jsonl")], "rule": "lm-eval"})
    table = run_trace(config, tmp_path / "run")
    rows = table.to_pylist()
    assert all(row["loss"] == pytest.approx(-row["logprob_sum"]) for row in rows)
    items = item_records(tiny_trace_run.items)
    accuracy = json.loads((tmp_path / "run" / "accuracy.json").read_text(encoding="utf-8"))
    for step in (0, 2, 4):
        by_item: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            if row["step"] == step and row["kind"] == "question":  # a question's choice is the option itself
                by_item.setdefault(row["item_id"], []).append(row)
        right = {"sum": 0, "per_char": 0}
        for item_id, options in by_item.items():
            options.sort(key=lambda r: r["option_index"])
            texts = items[item_id]["options"]
            acc = max(range(len(options)), key=lambda i: (options[i]["logprob_sum"], -i))
            acc_norm = max(range(len(options)), key=lambda i: (options[i]["logprob_sum"] / len(texts[i]), -i))
            right["sum"] += acc == items[item_id]["answer"]
            right["per_char"] += acc_norm == items[item_id]["answer"]
        for norm in ("sum", "per_char"):
            at = accuracy[str(step)]
            got = [at["accuracy"][norm][f"condition={c}"] * at["n_items"][f"condition={c}"]
                   for c in ("intralingual", "interlingual")]
            assert round(sum(got)) == right[norm], (step, norm)
    rebuild_report(tmp_path / "run")
    lines = accuracy_lines(tmp_path / "run")
    assert any(line.startswith("intralingual acc ") for line in lines)
    assert any(line.startswith("intralingual acc_norm") for line in lines)


# ---- the interlingual pairing that `generate` writes ------------------------------------------------------------


def write_generated_dataset(root: Path) -> Path:
    """A dataset in `crossknow generate`'s layout, written by hand: pair p1 gave an English item (from document
    p1-en) and a Japanese one (from p1-ja), pair p2 a Japanese item only; interlingual.jsonl links each item to
    its pair's other document. Returns the dataset directory."""
    options_en, options_ja = ["glucose", "sodium", "urea", "iron"], ["血糖", "ナトリウム", "尿素", "鉄"]
    lines = {
        "en/memorization.jsonl": [("p1-en#0", "en", "Insulin lowers [BLANK] in the blood.", options_en)],
        "en/generalization.jsonl": [("p1-en#0", "en", "What does insulin lower in the blood?", options_en)],
        "ja/memorization.jsonl": [("p1-ja#2", "ja", "インスリンは[BLANK]を下げる。", options_ja),
                                  ("p2-ja#0", "ja", "[BLANK]は骨を作る。", ["カルシウム", "鉄", "銅", "亜鉛"])],
        "ja/generalization.jsonl": [("p1-ja#2", "ja", "インスリンが下げるものは何か？", options_ja),
                                    ("p2-ja#0", "ja", "骨を作るものは何か？", ["カルシウム", "鉄", "銅", "亜鉛"])],
    }
    for name, records in lines.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(
            json.dumps({"id": item_id, "lang": lang, "question": question, "options": options, "answer_idx": 0,
                        "metadata": {"docid": item_id.split("#")[0]}}, ensure_ascii=False) + "\n"
            for item_id, lang, question, options in records
        ), encoding="utf-8")
    links = [
        {"item_id": "p1-en#0", "lang": "en", "doc_id": "p1-en", "pair_id": "p1", "partner_lang": "ja",
         "partner_doc_id": "p1-ja", "support": 2},
        {"item_id": "p1-ja#2", "lang": "ja", "doc_id": "p1-ja", "pair_id": "p1", "partner_lang": "en",
         "partner_doc_id": "p1-en", "support": 2},
        {"item_id": "p2-ja#0", "lang": "ja", "doc_id": "p2-ja", "pair_id": "p2", "partner_lang": "en",
         "partner_doc_id": "p2-en", "support": 1},
    ]
    (root / "interlingual.jsonl").write_text("".join(json.dumps(link) + "\n" for link in links), encoding="utf-8")
    return root


def generated_sets(root: Path) -> list[str]:
    return [str(root / lang / f"{name}.jsonl") for lang in ("en", "ja") for name in ("memorization", "generalization")]


def test_load_sets_links_each_item_to_its_pair_through_the_pairing_generate_wrote(tmp_path: Path) -> None:
    root = write_generated_dataset(tmp_path / "dataset")
    sets = load_sets(generated_sets(root), "en")
    assert {s.pairing for s in sets} == {(root / "interlingual.jsonl").resolve()}
    labelled = {(s.name, i.id): (c, i.pair_id, link.partner_doc_id)
                for s in sets for i, c, link in zip(s.items, s.conditions, s.links, strict=True)}
    assert labelled == {
        ("en/memorization", "cloze:p1-en#0"): ("memorisation", "p1", "p1-ja"),
        ("en/generalization", "question:p1-en#0"): ("intralingual", "p1", "p1-ja"),
        ("ja/memorization", "cloze:p1-ja#2"): ("interlingual-cloze", "p1", "p1-en"),
        ("ja/memorization", "cloze:p2-ja#0"): ("interlingual-cloze", "p2", "p2-en"),
        ("ja/generalization", "question:p1-ja#2"): ("interlingual", "p1", "p1-en"),
        ("ja/generalization", "question:p2-ja#0"): ("interlingual", "p2", "p2-en"),
    }


def test_the_pairing_decides_which_items_are_interlingual(tmp_path: Path) -> None:
    root = write_generated_dataset(tmp_path / "dataset")
    japanese = [str(root / "ja" / "generalization.jsonl")]
    with pytest.raises(CrossknowError, match=r"pairs with a document in 'en', not in the training language 'fr'"):
        load_sets(japanese, "fr")  # by language alone these would be interlingual for a French-trained model
    links = (root / "interlingual.jsonl").read_text(encoding="utf-8").splitlines()
    (root / "interlingual.jsonl").write_text("\n".join(links[:2]) + "\n", encoding="utf-8")
    with pytest.raises(CrossknowError, match=r"item 'question:p2-ja#0' \(ja\) has no line in the pairing"):
        load_sets(japanese, "en")
    assert load_sets([f"interlingual={japanese[0]}"], "en")[0].conditions == ["interlingual", "interlingual"]
    # a pairing given explicitly serves sets that have none of their own
    elsewhere = tmp_path / "copy" / "generalization.jsonl"
    elsewhere.parent.mkdir()
    shutil.copy(japanese[0], elsewhere)
    assert load_sets([str(elsewhere)], "en")[0].pairing is None
    pairing = write_generated_dataset(tmp_path / "d2") / "interlingual.jsonl"
    explicit = load_sets([str(elsewhere)], "en", pairing=str(pairing))
    assert [i.pair_id for i in explicit[0].items] == ["p1", "p2"]


def test_a_malformed_pairing_names_its_file_line_and_field(tmp_path: Path) -> None:
    root = write_generated_dataset(tmp_path / "dataset")
    links = (root / "interlingual.jsonl").read_text(encoding="utf-8").splitlines()
    broken = json.loads(links[1])
    del broken["partner_lang"]
    (root / "interlingual.jsonl").write_text("\n".join([links[0], json.dumps(broken)]) + "\n", encoding="utf-8")
    with pytest.raises(CrossknowError, match=r"interlingual\.jsonl, line 2: field 'partner_lang': Field required"):
        load_sets(generated_sets(root), "en")
    (root / "interlingual.jsonl").write_text("\n".join([links[0], links[0]]) + "\n", encoding="utf-8")
    with pytest.raises(CrossknowError, match=r"line 2: field 'item_id': item 'p1-en#0' \(en\) is linked twice"):
        load_sets(generated_sets(root), "en")


@pytest.mark.slow
def test_the_trace_table_links_a_pairs_two_languages(tmp_path: Path) -> None:
    """`run_trace` on a generated dataset (base model only): the rows of an item carry its pair and the partner
    document, and accuracy.json counts the Japanese items of an English-trained model as interlingual."""
    from crossknow.dynamics.trace_config import TraceConfig

    root = write_generated_dataset(tmp_path / "dataset")
    config = TraceConfig(checkpoints=["0=default"], data=generated_sets(root), train_lang="en", device="cpu")
    table = run_trace(config, tmp_path / "run")
    rows = {(r["lang"], r["item_id"]): (r["condition"], r["pair_id"], r["partner_lang"], r["partner_doc_id"])
            for r in table.to_pylist()}
    assert rows == {
        ("en", "cloze:p1-en#0"): ("memorisation", "p1", "ja", "p1-ja"),
        ("en", "question:p1-en#0"): ("intralingual", "p1", "ja", "p1-ja"),
        ("ja", "cloze:p1-ja#2"): ("interlingual-cloze", "p1", "en", "p1-en"),
        ("ja", "cloze:p2-ja#0"): ("interlingual-cloze", "p2", "en", "p2-en"),
        ("ja", "question:p1-ja#2"): ("interlingual", "p1", "en", "p1-en"),
        ("ja", "question:p2-ja#0"): ("interlingual", "p2", "en", "p2-en"),
    }
    accuracy = json.loads((tmp_path / "run" / "accuracy.json").read_text())
    assert accuracy["0"]["n_items"]["condition=interlingual"] == 2
    inputs = json.loads((tmp_path / "run" / "inputs.json").read_text())
    assert any(path.endswith("interlingual.jsonl") for path in inputs)


def test_the_literal_boundary_is_refused_with_the_lm_eval_rule_before_anything_runs() -> None:
    """`--boundary literal` (the AdaXEval authors' tokenisation) is for the adaxeval rule only: the config refuses
    it with lm-eval, so that no run directory is made."""
    from crossknow.dynamics.trace_config import TraceConfig

    assert TraceConfig(checkpoints=["default"], data=["x.jsonl"], boundary="literal").boundary == "literal"
    with pytest.raises(CrossknowError, match="adaxeval rule only; this run's rule is lm-eval"):
        TraceConfig(checkpoints=["default"], data=["x.jsonl"], rule="lm-eval", boundary="literal")
