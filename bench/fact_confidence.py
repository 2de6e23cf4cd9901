"""The distribution of a fact detector's P(yes) in both field orders, on real J-STAGE sentences.

Runs the 'facts' stage (`crossknow.adaxeval.facts.fact_rows`, one detector, the default generation settings) on
the first N English and N Japanese sentences of /work/shared/data/adaxeval-paper-examples.jsonl (sentences the
AdaXEval authors kept as facts), once with Appendix A.1's order (factuality, triple, reason: the default) and
once with the reasoning first, and prints each vote, the deciles and a histogram of P(yes) per order. Model calls
go through a request cache, so a rerun costs nothing.

    .venv/bin/python bench/fact_confidence.py [--detector default] [--n 5] [--max-tokens 200] [--cache FILE]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from crossknow.adaxeval.facts import ANSWERS, KeepRule, fact_rows
from crossknow.adaxeval.prompts import PromptTable
from crossknow.adaxeval.records import SentenceRecord
from crossknow.generation.structured import StructuredClient
from crossknow.models.registry import load_generator
from crossknow.store.request_cache import RequestCache

EXAMPLES = Path("/work/shared/data/adaxeval-paper-examples.jsonl")


def sentences(n: int) -> list[SentenceRecord]:
    """The first `n` sentences of each language of EXAMPLES."""
    rows = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines()]
    chosen = [row for lang in ("en", "ja") for row in [r for r in rows if r["lang"] == lang][:n]]
    return [SentenceRecord(id=f"x{k}#0", doc_id=f"x{k}", pair_id=f"p{k}", lang=row["lang"], index=0,
                           text=row["sentence"]) for k, row in enumerate(chosen)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detector", default="default")
    parser.add_argument("--n", type=int, default=5, help="sentences per language")
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--cache", default="/tmp/fact_confidence.sqlite")
    args = parser.parse_args()
    chosen = sentences(args.n)
    cache = RequestCache(args.cache)
    client = StructuredClient(load_generator(args.detector), cache, max_attempts=3, max_tokens=args.max_tokens)
    try:
        for order in ANSWERS:
            started = time.monotonic()
            rows = fact_rows(chosen, [(args.detector, client)], PromptTable.load(), KeepRule("sum", 2 / 3, 1), order)
            votes = [row.record.votes[0] for row in rows if row is not None]
            p = np.array([vote.confidence for vote in votes if vote.confidence is not None])
            print(f"== {order}: {len(p)} valid of {len(chosen)}, {time.monotonic() - started:.0f} s")
            for sentence, vote in zip(chosen, votes, strict=True):
                shown = "invalid" if vote.confidence is None else f"{vote.confidence:.4f}"
                print(f"  {sentence.lang} {vote.factuality} P(yes)={shown} {vote.call.error or ''}"[:160])
            if len(p):
                print("  deciles 0%..100%:", np.round(np.quantile(p, np.linspace(0, 1, 11)), 3).tolist())
                counts, _ = np.histogram(p, bins=np.append(np.linspace(0, 0.9, 10), 1.0001))
                print("  histogram, bins of 0.1 from 0 to 1:", counts.tolist())
    finally:
        cache.close()


if __name__ == "__main__":
    main()
