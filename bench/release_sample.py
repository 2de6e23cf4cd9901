"""A seeded random sample of the AdaXEval release, as one crossknow JSONL file that `evaluate` reads.

N items from each release file, drawn with one `random.Random(seed)` in the order the files are given.
The release reuses ids across its English and Japanese files (434 ids in each pair of files), so each id
is prefixed with its file's stem (`en_knowledge_memorization:cloze:...`); nothing else of an item changes.
The draw and the prefix are crossknow's choices; the paper describes no sample.

    .venv/bin/python bench/release_sample.py --out sample.jsonl --per-file 100 --seed 0 \\
        DIR/en_knowledge_memorization.jsonl DIR/en_knowledge_generalization.jsonl \\
        DIR/ja_knowledge_memorization.jsonl DIR/ja_knowledge_generalization.jsonl
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path


def sample_release(paths: list[Path], per_file: int, seed: int) -> list:
    """`per_file` items of each file (all of a smaller one), in file order, ids prefixed with the file stem."""
    from crossknow.data.adaxeval import read_adaxeval

    rng, sample = random.Random(seed), []
    for path in paths:
        items = read_adaxeval(path).items
        chosen = rng.sample(range(len(items)), min(per_file, len(items)))
        sample += [items[i].model_copy(update={"id": f"{path.stem}:{items[i].id}"}) for i in sorted(chosen)]
    return sample


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", type=Path, nargs="+", help="AdaXEval release files")
    parser.add_argument("--out", type=Path, required=True, help="the sample, crossknow JSONL")
    parser.add_argument("--per-file", type=int, default=100, help="items drawn from each file")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from crossknow.data.jsonl import write_jsonl

    sample = sample_release(args.files, args.per_file, args.seed)
    write_jsonl(args.out, sample)
    print(f"{len(sample)} items from {len(args.files)} files: {args.out}")


if __name__ == "__main__":
    main()
