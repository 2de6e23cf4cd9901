"""docs/scoring.md's table of other model families: `evaluate` against a float64 reference and lm-eval, per family.

On the real tokenizers of Llama 3, Llama 2, Qwen2 and Phi-3 (`make vocab`) with the tests' tiny random model of
each architecture (tests/families/tiny_models.py), for the AdaXEval paper examples under both rules and the first
4 Japanese Cross-Lingual Pitfalls pairs under lm-eval's: whether the tokenizer adds BOS, the items reported
unscorable, and the largest |difference| of a summed log-probability against the float64 reference and against
lm-evaluation-harness's HF backend (lm-eval's rule only: under crossknow's, a question's newline stays in the
context, where lm-eval moves it). tests/families checks the bounds; this prints the figures.

    .venv/bin/python bench/family_agreement.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.families.conftest import EXAMPLES, evaluate_family  # noqa: E402
from tests.families.test_scoring import PAIR_LIMIT, PAIRS, items_of  # noqa: E402
from tests.families.tiny_models import write_family_model  # noqa: E402
from tests.families.vocab import FAMILIES  # noqa: E402
from tests.lm_eval_peer import lm_eval_loglikelihoods  # noqa: E402
from tests.reference_scoring import reference_scores  # noqa: E402

SETS = ((EXAMPLES, "adaxeval"), (EXAMPLES, "lm-eval"), (PAIRS, "lm-eval"))


def family_row(family: str, work: Path) -> list[str]:
    """The table's cells for one family."""
    from transformers import AutoTokenizer

    from crossknow.scoring.rules import option_requests

    model_dir = write_family_model(family, work / family)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    adds_bos = tokenizer("x").input_ids[0] == tokenizer.bos_token_id
    cells = [family, FAMILIES[family], f"{len(tokenizer):,}", "yes" if adds_bos else "no"]
    for data, rule in SETS:
        limit = {"limit": PAIR_LIMIT} if data == PAIRS else {}
        run = evaluate_family(family, model_dir, data, work / f"{family}-{data.stem}-{rule}", rule=rule, **limit)
        items, rows = items_of(data), run.rows
        scores, _ = reference_scores(model_dir, [item for item in items if item.id not in run.unscorable], rule)
        cell = f"{len(items) - len(run.unscorable)}/{len(items)}"
        if run.unscorable:
            cell += f" ({', '.join(sorted(run.unscorable))})"
        cells += [cell, f"{max(abs(rows[key].logprob_sum - sum(values)) for key, (values, _) in scores.items()):.1e}"]
        if rule == "lm-eval":
            requests = {(item.id, index): option.request for item in items if item.id not in run.unscorable
                        for index, option in enumerate(option_requests(item, rule))}
            theirs = lm_eval_loglikelihoods(model_dir, list(requests.values()))
            pairs = zip(requests, theirs, strict=True)
            worst = max(abs(rows[key].logprob_sum - logprob) for key, (logprob, _) in pairs)
            cells.append(f"{worst:.1e}")
    return cells


def main() -> None:
    header = ["family", "llama.cpp vocab", "entries", "adds BOS",
              "AdaXEval scored (crossknow's rule)", "vs float64",
              "AdaXEval scored (lm-eval's rule)", "vs float64", "vs lm-eval",
              "Pitfalls scored", "vs float64", "vs lm-eval"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    with tempfile.TemporaryDirectory() as work:
        for family in FAMILIES:
            print("| " + " | ".join(family_row(family, Path(work))) + " |", flush=True)


if __name__ == "__main__":
    main()
