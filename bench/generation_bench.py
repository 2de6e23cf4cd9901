"""Batched generation against one request at a time, with the embedded model on the CPU.

The same chat prompts, greedy, the same `max_tokens`, through `HFGenerator.generate` at
`batch_size=1` and at `batch_size=8`; prints tokens per second of each and their ratio, and checks
that the batched outputs equal the one-at-a-time outputs. Runs alternate (1, 8, 1, 8, ...) and each
size reports its best run, so that load from other processes on a shared machine touches both alike.

    .venv/bin/python bench/generation_bench.py [--prompts 8] [--max-tokens 32] [--repeats 2]
"""

from __future__ import annotations

import argparse
import time

from crossknow.models.generator import ChatMessage, GenerateRequest
from crossknow.models.registry import GeneratorOptions, load_generator

PROMPTS = (
    "The capital of Japan is",
    "Write one sentence about insulin.",
    "日本の首都はどこですか？",
    "List three colours.",
    "What is the boiling point of water at sea level?",
    "Translate 'cat' into French.",
    "Name a famous physicist and say what she or he discovered.",
    "富士山の高さは何メートルですか？",
    "Explain photosynthesis in one line.",
    "Which planet is closest to the sun?",
    "What does DNA stand for?",
    "東京タワーはいつ建てられましたか？",
)
"""Real questions in English and Japanese, of different lengths."""


def timed(generator, requests: list[GenerateRequest], batch_size: int) -> tuple[float, int, list[str]]:
    """(seconds, completion tokens, texts) of one `generate` call at `batch_size`."""
    generator.batch_size = batch_size
    started = time.perf_counter()
    results = generator.generate(requests)
    seconds = time.perf_counter() - started
    return seconds, sum(r.usage.completion_tokens for r in results), [r.text for r in results]


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=8, help="Requests per generate call.")
    parser.add_argument("--max-tokens", type=int, default=32, help="Tokens per request (greedy; most run to it).")
    parser.add_argument("--repeats", type=int, default=2, help="Timed runs of each batch size.")
    args = parser.parse_args()

    generator = load_generator("default", GeneratorOptions(device="cpu", dtype="float32"))
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(args.prompts)]
    requests = [GenerateRequest(messages=(ChatMessage("user", p),), max_tokens=args.max_tokens) for p in prompts]
    timed(generator, requests[:2], 2)  # warm-up
    best: dict[int, tuple[float, int]] = {}
    texts: dict[int, list[str]] = {}
    for _ in range(args.repeats):
        for size in (1, 8):
            seconds, tokens, texts[size] = timed(generator, requests, size)
            if size not in best or seconds < best[size][0]:
                best[size] = (seconds, tokens)
            print(f"  batch {size}: {tokens} tokens in {seconds:.1f} s")
    rate = {size: tokens / seconds for size, (seconds, tokens) in best.items()}
    same = sum(a == b for a, b in zip(texts[1], texts[8], strict=True))
    print(f"embedded Gemma 3 270M, float32, CPU, {len(requests)} prompts x {args.max_tokens} tokens, greedy")
    print(f"batch 1: {rate[1]:.2f} tokens/s")
    print(f"batch 8: {rate[8]:.2f} tokens/s")
    print(f"ratio:   {rate[8] / rate[1]:.2f}x")
    print(f"batched outputs equal to one-at-a-time: {same}/{len(requests)}")


if __name__ == "__main__":
    main()
