"""The e5 check's thresholds, measured on the released pairs (`crossknow.pitfalls.e5_threshold`).

Scores every kind of text pair (original vs perturbed English, root translation, perturbed pair, joined
choices) on the release, positives against seeded shuffled negatives, and prints per kind and language the
true-accept rate (positives at or above the threshold) and the false-accept rate (negatives at or above it)
at the thresholds the rule gives, the share of root translations whose question and choices both pass,
then the thresholds beside the constants in `crossknow.pitfalls.e5`. 17 to 29 minutes on 2 busy cores
(the 400 long perturbed pairs take most of it); `--scores` re-reads the scores of an earlier `--json`.

    .venv/bin/python bench/e5_threshold.py [--release ../shared/data/cross-lingual-pitfalls] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from crossknow.pitfalls.e5_threshold import (
    KINDS,
    THRESHOLD_OF,
    KindScores,
    accept_rate,
    pooled,
    release_scores,
    thresholds,
    unperturbed_accept_rate,
)

from crossknow.pitfalls import e5


def main() -> None:
    """Measure (or re-read), print the table and the thresholds, optionally write everything as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"
                                                 / "cross-lingual-pitfalls"))
    parser.add_argument("--json", help="Write the scores, rates and thresholds to this file.")
    parser.add_argument("--scores", help="Re-read the scores of an earlier --json instead of embedding again.")
    args = parser.parse_args()
    started = time.monotonic()
    if args.scores:
        saved = json.loads(Path(args.scores).read_text(encoding="utf-8"))["scores"]
        scores = {kind: {lang: KindScores(**s) for lang, s in by.items()} for kind, by in saved.items()}
    else:
        scores = release_scores(args.release)
    seconds = time.monotonic() - started
    chosen = thresholds(scores)
    rows = []
    print(f"{'kind':10} {'language':10} {'pos':>5} {'neg':>5} {'pos min':>8} {'pos med':>8} {'neg med':>8} "
          f"{'neg max':>8} {'t':>5} {'TAR':>7} {'FAR':>7}")
    for kind in KINDS:
        t = chosen[THRESHOLD_OF[kind]]
        for language, s in [*scores[kind].items(), ("all", pooled(scores[kind]))]:
            row = {"kind": kind, "language": language, "positives": len(s.positives), "negatives": len(s.negatives),
                   "threshold": t, "true_accept": accept_rate(s.positives, t),
                   "false_accept": accept_rate(s.negatives, t)}
            rows.append(row)
            print(f"{kind:10} {language:10} {len(s.positives):5} {len(s.negatives):5} {min(s.positives):8.3f} "
                  f"{statistics.median(s.positives):8.3f} {statistics.median(s.negatives):8.3f} "
                  f"{max(s.negatives):8.3f} {t:5.2f} {row['true_accept']:7.1%} {row['false_accept']:7.1%}")
    both = {lang: unperturbed_accept_rate(scores["root"][lang], scores["choices"][lang], chosen["theta_root"],
                                          chosen["theta_choices"]) for lang in scores["root"]}
    both["all"] = unperturbed_accept_rate(pooled(scores["root"]), pooled(scores["choices"]), chosen["theta_root"],
                                          chosen["theta_choices"])
    print("root translations whose question and choices both pass: "
          + ", ".join(f"{lang} {rate:.0%}" for lang, rate in both.items()))
    constants = {"theta": e5.THETA, "theta_root": e5.THETA_ROOT, "theta_cross": e5.THETA_CROSS,
                 "theta_choices": e5.THETA_CHOICES}
    print(f"measured: {chosen}\nconstants in crossknow.pitfalls.e5: {constants}\nscored in {seconds:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "thresholds": chosen, "constants": constants, "rates": rows, "unperturbed_accept": both,
            "seconds": round(seconds, 1),
            "scores": {kind: {lang: vars(s) for lang, s in by.items()} for kind, by in scores.items()},
        }, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
