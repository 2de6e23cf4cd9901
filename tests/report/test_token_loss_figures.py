"""Figs. 10-11 (section 5.2) and the report section of a per-token run, on small tables computed by hand."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from crossknow.report.token_loss_figures import GROUP_FILE, draw_fig10, draw_fig11, token_loss_section


def group_rows(lang: str, kind: str, group: str, losses: list[float], n_tokens: int) -> list[dict]:
    return [{"step": 10 * i, "lang": lang, "kind": kind, "group": group, "mean_loss": loss, "n_tokens": n_tokens,
             "n_sequences": 1} for i, loss in enumerate(losses)]


def test_fig11_draws_pos_groups_as_their_loss_and_script_classes_as_their_change() -> None:
    groups = pd.DataFrame(group_rows("ja", "script", "japanese", [5.0, 4.0, 4.5], 40)
                          + group_rows("ja", "script", "latin", [6.0, 3.0, 2.0], 12)
                          + group_rows("ja", "pos", "NUM", [7.0, 5.0, 4.0], 10)
                          + group_rows("ja", "pos", "INTJ", [9.0, 1.0, 1.0], 3)  # too few tokens to draw
                          + group_rows("en", "pos", "NOUN", [1.0, 1.0, 1.0], 50))

    def curves(axes) -> dict[str, list[float]]:
        return {line.get_label(): list(line.get_ydata()) for line in axes.lines if not line.get_label().startswith("_")}

    figure = draw_fig11(groups, "ja")
    assert figure is not None
    left, right = figure.axes
    assert curves(left) == {"japanese (n=40)": [0.0, -1.0, -0.5], "latin (n=12)": [0.0, -3.0, -4.0]}
    assert curves(right) == {"NUM (n=10)": [7.0, 5.0, 4.0]}  # the loss itself, as the paper's Fig. 11
    assert (left.get_ylabel(), right.get_ylabel()) == ("mean token loss − first step (nats)", "mean token loss (nats)")
    left, right = draw_fig11(groups, "ja", pos_relative=True).axes  # the option: its change since the first step
    assert curves(right) == {"NUM (n=10)": [0.0, -2.0, -3.0]} and right.get_ylabel() == left.get_ylabel()
    left, _ = draw_fig11(groups, "ja", script_relative=False).axes
    assert curves(left) == {"japanese (n=40)": [5.0, 4.0, 4.5], "latin (n=12)": [6.0, 3.0, 2.0]}
    assert draw_fig11(groups, "ko") is None


def test_fig10_has_a_panel_per_run_and_a_curve_per_language() -> None:
    def sequences(en: list[float], ja: list[float]) -> pd.DataFrame:
        rows = [{"step": step, "variant_id": f"{lang}{k}", "lang": lang, "method": "original", "loss": loss}
                for lang, losses in (("en", en), ("ja", ja)) for k, pair in enumerate(losses)
                for step, loss in zip((0, 5), pair, strict=True)]
        return pd.DataFrame(rows)

    figure = draw_fig10({"English training": sequences([(2.0, 1.0), (4.0, 2.0)], [(5.0, 4.5)]),
                         "Japanese training": sequences([(3.0, 3.0)], [(6.0, 2.0)])})
    first, second = figure.axes
    assert first.get_title() == "English training"
    curves = {line.get_label(): list(line.get_ydata()) for line in first.lines}
    assert curves == {"en sequences (n=2)": [3.0, 1.5], "ja sequences (n=1)": [5.0, 4.5]}
    assert {line.get_label(): list(line.get_ydata()) for line in second.lines} == {
        "en sequences (n=1)": [3.0, 3.0], "ja sequences (n=1)": [6.0, 2.0]}


def test_the_report_section_reads_the_originals_only(tmp_path: Path) -> None:
    # ten Japanese originals '研究。' (tokens 研究 NOUN and 。 PUNCT, both japanese script) and one mask variant
    sequence_rows, token_rows = [], []
    for k in range(10):
        for step, (noun, punct) in ((0, (3.0, 2.0)), (10, (1.0, 1.5))):
            sequence_rows.append({"step": step, "variant_id": f"j{k}", "lang": "ja", "method": "original",
                                  "loss": (noun + punct) / 2})
            token_rows += [{"step": step, "variant_id": f"j{k}", "lang": "ja", "position": 0, "char_start": 0,
                            "char_end": 2, "loss": noun},
                           {"step": step, "variant_id": f"j{k}", "lang": "ja", "position": 1, "char_start": 2,
                            "char_end": 3, "loss": punct}]
    for step in (0, 10):
        sequence_rows.append({"step": step, "variant_id": "m", "lang": "ja", "method": "mask", "loss": 20.0})
        token_rows.append({"step": step, "variant_id": "m", "lang": "ja", "position": 0, "char_start": None,
                           "char_end": None, "loss": 20.0})
    texts = {f"j{k}": "研究。" for k in range(10)}  # the mask variant's text is not needed
    section = token_loss_section(tmp_path, pd.DataFrame(sequence_rows), pd.DataFrame(token_rows), texts, "run A")
    assert section.findings == [
        "ja sequences: mean loss 2.500 at step 0, 1.250 at step 10 (last); lowest 1.250 at step 10.",
        "ja tokens by POS, change of mean token loss first → last step: NOUN -2.000; PUNCT -0.500.",
        "ja tokens by script, change of mean token loss first → last step: japanese -1.250.",
    ]
    assert (tmp_path / "figures" / "fig10-languages.png").is_file()
    assert (tmp_path / "figures" / "fig11-tokens-ja.png").is_file()
    saved = pd.read_parquet(tmp_path / GROUP_FILE)
    japanese = saved[(saved["kind"] == "script") & (saved["group"] == "japanese")]
    assert japanese["mean_loss"].tolist() == pytest.approx([2.5, 1.25])
    assert japanese["n_tokens"].tolist() == [20, 20]
    assert any('id="fig-fig11-tokens-ja"' in part for part in section.figures)
