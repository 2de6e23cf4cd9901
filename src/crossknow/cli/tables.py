"""Rich tables and titles the CLI prints."""

from __future__ import annotations

from rich.table import Table

from crossknow.evaluation.records import EvaluateMetrics
from crossknow.scoring.normalise import Normalisation

PRIMARY = {"adaxeval": Normalisation.MEAN_TOKEN.value, "lm-eval": Normalisation.SUM.value}
"""The normalisation each rule's accuracy is defined by (lm-eval's acc_norm is per_char)."""


def scoring_label(rule: str, boundary: str) -> str:
    """'rule R, boundary B', with a reminder when B is the AdaXEval authors' literal tokenisation."""
    note = " = the AdaXEval authors' tokenisation" if boundary == "literal" else ""
    return f"rule {rule}, boundary {boundary}{note}"


def metrics_table(metrics: EvaluateMetrics) -> Table:
    """Accuracy per group (rows) under each normalisation (columns); the rule's own in bold. The title names
    the rule and the boundary rule the numbers were scored under."""
    primary = PRIMARY[metrics.rule]
    table = Table(
        title=f"accuracy by loss normalisation ({scoring_label(metrics.rule, metrics.boundary)}; * = the rule's own)",
        caption=f"{metrics.model.model_id}, {metrics.model.dtype}",
    )
    table.add_column("group", no_wrap=True)
    table.add_column("items", justify="right")
    for norm in Normalisation:
        label = norm.value + ("*" if norm.value == primary else "")
        table.add_column(label, justify="right", style="bold" if norm.value == primary else None)
    for group, count in metrics.n_items.items():
        table.add_row(group, str(count), *(f"{metrics.accuracy[norm.value][group]:.3f}" for norm in Normalisation))
    return table
