"""A one-item `crossknow evaluate` of the embedded model, start to exit, with crossknow's Gemma 3 module (as shipped)
and with transformers' Gemma 3 module in its place (the same scoring tokenizer): what keeping
`crossknow/models/gemma3_text.py` buys at start-up.

Each run is a fresh process; the two alternate `--repeats` times, so that load from other processes touches both
alike. Prints each run's seconds, then each variant's range.

    .venv/bin/python bench/gemma3_startup.py [--repeats 4]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUN = """
import sys
if sys.argv[1] == "transformers":
    import crossknow.models.hf_loading as loading
    def through_transformers(path, revision, model_id, device, dtype, load=loading.LoadSettings()):
        _, model = loading.load_causal_lm(path, revision, model_id, device, dtype, load)
        return loading.load_tokenizer(path, revision, scoring=True), model
    loading.load_scoring_model = through_transformers
from crossknow.cli.app import app
app(["evaluate", "--data", "sample", "--limit", "1", "--out", sys.argv[2]], standalone_mode=False)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=4, help="Runs of each variant.")
    args = parser.parse_args()
    seconds: dict[str, list[float]] = {"crossknow": [], "transformers": []}
    with tempfile.TemporaryDirectory() as scratch:
        for repeat in range(args.repeats):
            for variant in seconds:
                out = Path(scratch) / f"{variant}-{repeat}"
                started = time.perf_counter()
                subprocess.run([sys.executable, "-c", RUN, variant, str(out)], check=True, capture_output=True)
                seconds[variant].append(time.perf_counter() - started)
                print(f"{variant:12} {seconds[variant][-1]:.2f} s", flush=True)
    for variant, values in seconds.items():
        print(f"{variant:12} {min(values):.2f} to {max(values):.2f} s over {len(values)} runs")


if __name__ == "__main__":
    main()
