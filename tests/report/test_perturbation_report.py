"""The perturbation curves, figures and report of `crossknow trace-sequences` (full paper section 5.1, Figs. 5-9):
on a constructed table whose numbers are computed by hand, and on a small real run of two checkpoints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from crossknow.data.sequence_variants import SequenceVariant
from crossknow.dynamics.onset import OnsetParams
from crossknow.dynamics.sequence_curves import curve_label, curve_summary, paired_gaps, sequence_curves
from crossknow.perturb.edits import token_edit_distance
from crossknow.report.perturbation_figures import FIGURES, perturbation_figure, reorder_window
from crossknow.report.perturbation_report import write_perturbation_report
from tests.training.tiny_run import TinyTrainRun

from .parse import ReportParser

STEPS = [0, 10, 20, 30]
LOSSES = {  # (variant, source, method, x, y, a) -> loss at each step
    ("o1", "s1", "original", None, None, None): [4.0, 3.0, 2.0, 2.5],
    ("o2", "s2", "original", None, None, None): [6.0, 5.0, 4.0, 4.5],
    ("m1", "s1", "mask", 8, None, None): [7.0, 6.0, 6.5, 7.0],  # only s1 has a mask-8 variant
    ("p1", "s1", "partial", None, None, 1): [5.0, 4.0, 3.0, 2.0],
    ("p2", "s2", "partial", None, None, 1): [7.0, 6.0, 5.0, 4.0],
}


def constructed_table(extra: dict | None = None) -> pd.DataFrame:
    rows = [{"step": step, "checkpoint": f"checkpoint-{step}", "variant_id": v, "source_id": s, "lang": "en",
             "method": m, "x": x, "y": y, "a": a, "n_tokens": 10, "logprob_sum": -10 * loss, "loss": loss}
            for (v, s, m, x, y, a), losses in (LOSSES | (extra or {})).items()
            for step, loss in zip(STEPS, losses, strict=True)]
    return pd.DataFrame(rows).astype({"x": "Int64", "y": "Int64", "a": "Int64"})


def test_curve_labels() -> None:
    assert curve_label("original") == "original"
    assert curve_label("mask", 8) == "mask-8"
    assert curve_label("reorder", 4, 2) == "reorder-4@2"
    assert curve_label("partial", a=3) == "partial-3"
    assert curve_label("syntax", float("nan"), pd.NA, None) == "syntax"


def test_curves_gaps_and_summary_by_hand() -> None:
    table = constructed_table()
    curves = sequence_curves(table)
    assert list(dict.fromkeys(curves["label"])) == ["original", "mask-8", "partial-1"]  # the paper's order
    assert curves[curves["label"] == "original"]["mean_loss"].tolist() == [5.0, 4.0, 3.0, 3.5]
    assert curves[curves["label"] == "partial-1"]["mean_loss"].tolist() == [6.0, 5.0, 4.0, 3.0]

    gaps = paired_gaps(table).set_index(["label", "step"])["gap"]
    # mask-8 is paired with s1's original only: 7-4, 6-3, 6.5-2, 7-2.5 (the difference of means would be 2 at step 0)
    assert [gaps["mask-8", step] for step in STEPS] == [3.0, 3.0, 4.5, 4.5]
    assert [gaps["partial-1", step] for step in STEPS] == [1.0, 1.0, 1.0, -0.5]

    summary = curve_summary(table).set_index("label")
    mask = summary.loc["mask-8"]
    # minimum 6.0 at step 10, then 6.5 and 7.0: two checkpoints risen by more than 0.01 through the end -> onset 10
    assert (mask["n_sequences"], mask["first_loss"], mask["last_loss"], mask["min_loss"], mask["min_step"],
            mask["onset_step"], mask["gap_first"], mask["gap_last"]) == (1, 7.0, 7.0, 6.0, 10, 10, 3.0, 4.5)
    # the originals' minimum (3.0 at step 20) is followed by one risen checkpoint only: no sustained rise
    assert pd.isna(summary.loc["original", "onset_step"]) and pd.isna(summary.loc["original", "gap_first"])
    assert pd.isna(summary.loc["partial-1", "onset_step"])
    assert curve_summary(table, OnsetParams(patience=1)).set_index("label").loc["original", "onset_step"] == 20


def scatter_points(figure: Any) -> list[tuple[float, float]]:
    """The ▲ markers of a figure: every scatter point of its axes."""
    return [tuple(point) for collection in figure.axes[0].collections for point in collection.get_offsets()]


def test_figures_mark_the_onset_and_are_drawn_only_when_their_variants_exist() -> None:
    reorder = {(f"r{y}", "s1", "reorder", 8, y, None): [4.5, 3.5, 2.5, 3.0] for y in (1, 3, 4, 16)}
    curves = sequence_curves(constructed_table(reorder))
    by_name = {spec.name: spec for spec in FIGURES}
    mask = perturbation_figure(curves, by_name["fig5-mask"])
    assert scatter_points(mask) == [(10.0, 6.0)]  # mask-8's onset; the originals have none
    assert [line.get_label() for line in mask.axes[0].get_lines()] == ["original (n=2)", "mask-8 (n=1)"]
    token_8 = perturbation_figure(curves, by_name["fig6-token-8"])
    # reorder at the authors' window 3 (their retoken-8@3), not at 1, 4 or 16
    assert [line.get_label() for line in token_8.axes[0].get_lines()] == ["original (n=2)", "mask-8 (n=1)",
                                                                          "reorder-8@3 (n=1)"]
    without_3 = sequence_curves(constructed_table({key: v for key, v in reorder.items() if key[4] != 3}))
    assert reorder_window(without_3, 8) == 1  # then the smallest window present
    assert perturbation_figure(curves, by_name["fig7-reorder-4"]) is None  # no reorder at 4%
    assert perturbation_figure(curves, by_name["fig9-rewrite-40"]) is None


# ---- a real run: two checkpoints of the tiny training run --------------------------------------------------------


def tiny_variants(train: TinyTrainRun, path: Path, tokenizer: Any) -> Path:
    """Three of the training documents' first sentences as originals, with mask-4 and mask-16 variants (every 25th
    or 6th token replaced by the unknown token, on the exact token ids) and their partial-1 and partial-4 (first and
    last quarter of the words)."""
    records = []
    for line in train.corpus.read_text(encoding="utf-8").splitlines()[:3]:
        document = json.loads(line)
        text, source = document["text"].split(". ")[0] + ".", document["id"]
        ids = tokenizer(text, add_special_tokens=False).input_ids
        base = {"source_id": source, "lang": "en", "x": None, "y": None, "a": None, "token_ids": None,
                "tokenizer": "default", "seed": 0}
        records.append(base | {"id": source, "method": "original", "level": "none", "text": text, "edit_distance": 0})
        for x, every in ((4, 25), (16, 6)):
            masked = [tokenizer.unk_token_id if i % every == 1 else token for i, token in enumerate(ids)]
            records.append(base | {"id": f"{source}-mask-{x}", "method": "mask", "level": "token", "x": x,
                                   "token_ids": masked, "text": tokenizer.decode(masked),
                                   "edit_distance": sum(m != t for m, t in zip(masked, ids, strict=True))})
        words = text.split(" ")
        quarter = len(words) // 4
        for a, part in ((1, words[:quarter]), (4, words[3 * quarter:])):
            part_ids = tokenizer(" ".join(part), add_special_tokens=False).input_ids
            records.append(base | {"id": f"{source}-partial-{a}", "method": "partial", "level": "sentence", "a": a,
                                   "text": " ".join(part), "edit_distance": token_edit_distance(ids, part_ids)})
    path.write_text("".join(SequenceVariant.model_validate(r).model_dump_json() + "\n" for r in records),
                    encoding="utf-8")
    return path


@pytest.mark.slow
def test_the_report_leads_with_the_summary_and_marks_the_onset(
    tiny_train_run: TinyTrainRun, embedded_scorer: Any, tmp_path: Path
) -> None:
    from crossknow.dynamics.sequence_inputs import SequenceLossConfig
    from crossknow.dynamics.sequence_loss import run_sequence_loss

    variants = tiny_variants(tiny_train_run, tmp_path / "variants.jsonl", embedded_scorer.tokenizer)
    # The trained checkpoint labelled step 0 and the base model step 2 (STEP= sets a checkpoint's step): training
    # lowered the loss of its own sentences (measured: 5.16 -> 3.52 nats on these originals), so their curve rises
    # and the onset rule has a rise to mark, whatever the perturbed curves do.
    checkpoints = [f"0={tiny_train_run.out / 'checkpoints' / 'checkpoint-2'}", "2=default"]
    config = SequenceLossConfig(checkpoints=checkpoints, variants=str(variants), batch_size=4, device="cpu")
    run = tmp_path / "run"
    table = run_sequence_loss(config, run).to_pandas()
    # With two checkpoints, an onset needs patience 1: a curve whose mean rose by more than tol from step 0 to step
    # 2 has its onset at step 0 (computed here by hand from the table).
    params = OnsetParams(patience=1)
    means = table.assign(label=[curve_label(m, x, y, a) for m, x, y, a in
                                table[["method", "x", "y", "a"]].itertuples(index=False)])
    means = means.groupby(["label", "step"])["loss"].mean().unstack("step")
    expected = {label: 0 if row[2] > row[0] + params.tol else None for label, row in means.iterrows()}
    assert expected["original"] == 0, means

    report = write_perturbation_report(run, params)

    summary = json.loads((run / "perturbation_summary.json").read_text(encoding="utf-8"))
    assert {row["label"]: row["onset_step"] for row in summary["settings"]} == expected
    page = report.read_text(encoding="utf-8")
    parsed = ReportParser()
    parsed.feed(page)
    assert set(parsed.figures) == {"fig-fig5-mask", "fig-fig8-partial"}  # no 8%, reorder or rewrite variants
    rows = {row[0]: row for row in parsed.tables["table-summary"].rows}
    assert rows["original"][parsed.tables["table-summary"].headers.index("onset step")] == "0"
    assert page.index('id="findings"') < page.index('id="table-summary"') < page.index("<figure")
    last_figure, first_details = page.rindex("</figure>"), page.index("<details>")
    assert last_figure < first_details < page.index('id="table-meta"')  # config and inputs at the end, collapsed
    assert (run / "figures" / "fig5-mask.png").is_file()

    curves = sequence_curves(table)
    mask = perturbation_figure(curves, next(spec for spec in FIGURES if spec.name == "fig5-mask"), params)
    original_at_0 = float(means.loc["original", 0])
    assert (0.0, pytest.approx(original_at_0)) in scatter_points(mask)  # ▲ on the originals' curve at step 0
