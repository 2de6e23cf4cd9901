"""Local generation speed: the embedded Gemma 3 270M as users get it (`default`, which generates on llama.cpp)
against llama.cpp's own loop, and against crossknow's transformers path of the same model.

The same chat prompts, greedy, the same `max_tokens`, through each path at several batch sizes:
- `default`: llama.cpp in process on the Q4_K_M file, continuous batching (crossknow.models.llamacpp_generator);
- `default --generator-backend transformers`: float32 transformers on the weights dequantised from the GGUF
  (`--bf16` adds bfloat16), at batch 1 and 8 only (it is the slow path);
- the peer: llama-cpp-python's `Llama.create_completion`, one stream, the same file and thread count.
Prints one table: tokens per second of each, how many outputs equal the same path's batch-1 outputs, and how many
equal the float32 generator's (batch 1). Runs alternate between paths and sizes, and each reports its best of
`--repeats`, so that load from other processes on a shared machine touches all alike.

    .venv/bin/python bench/generation_bench.py [--prompts 32] [--max-tokens 32] [--repeats 2] [--bf16]
"""

from __future__ import annotations

import argparse
import os
import time

from crossknow.models.chat_format import gemma_prompt
from crossknow.models.generator import ChatMessage, GenerateRequest
from crossknow.models.registry import ModelOptions, load_generator

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

LLAMACPP = "crossknow default (llama.cpp)"
SIZES = {LLAMACPP: (1, 8, 32)}
"""The batch sizes timed per path (8: the stages' default); the transformers paths take (1, 8)."""


def timed(generator, requests: list[GenerateRequest], batch_size: int) -> tuple[float, int, list[str]]:
    """(seconds, completion tokens, texts) of one `generate` call at `batch_size`."""
    generator.batch_size = batch_size
    started = time.perf_counter()
    results = generator.generate(requests)
    seconds = time.perf_counter() - started
    return seconds, sum(r.usage.completion_tokens for r in results), [r.text for r in results]


def timed_peer(llama, requests: list[GenerateRequest]) -> tuple[float, int, list[str]]:
    """(seconds, completion tokens, texts) of llama-cpp-python answering the requests one after another."""
    started = time.perf_counter()
    tokens, texts = 0, []
    for request in requests:
        llama.reset()
        out = llama.create_completion(gemma_prompt(request.messages), max_tokens=request.max_tokens, temperature=0.0,
                                      stop=["<end_of_turn>"])
        tokens += out["usage"]["completion_tokens"]
        texts.append(out["choices"][0]["text"])
    return time.perf_counter() - started, tokens, texts


def main() -> None:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=32, help="Requests per generate call.")
    parser.add_argument("--max-tokens", type=int, default=32, help="Tokens per request (greedy; most run to it).")
    parser.add_argument("--repeats", type=int, default=2, help="Timed runs of each path and batch size.")
    parser.add_argument("--bf16", action="store_true", help="Time transformers in bfloat16 too.")
    args = parser.parse_args()

    import llama_cpp

    from crossknow.models.checkpoint_cache import embedded_gguf

    threads = len(os.sched_getaffinity(0))
    paths = {LLAMACPP: load_generator("default", ModelOptions(device="cpu")),
             "crossknow transformers float32": load_generator(
                 "default", ModelOptions(device="cpu", dtype="float32", generator_backend="transformers"))}
    if args.bf16:
        paths["crossknow transformers bfloat16"] = load_generator(
            "default", ModelOptions(device="cpu", dtype="bfloat16", generator_backend="transformers"))
    peer = llama_cpp.Llama(str(embedded_gguf()), n_ctx=2048, n_threads=threads, verbose=False)
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(args.prompts)]
    requests = [GenerateRequest(messages=(ChatMessage("user", p),), max_tokens=args.max_tokens) for p in prompts]
    for generator in paths.values():
        timed(generator, requests[:2], 2)  # warm-up
    timed_peer(peer, requests[:1])

    best: dict[tuple[str, int], tuple[float, int]] = {}
    texts: dict[tuple[str, int], list[str]] = {}

    def keep(key: tuple[str, int], seconds: float, tokens: int, outputs: list[str]) -> None:
        texts[key] = outputs
        if key not in best or seconds < best[key][0]:
            best[key] = (seconds, tokens)
        print(f"  {key[0]}, batch {key[1]}: {tokens} tokens in {seconds:.1f} s", flush=True)

    peer_name = f"llama-cpp-python {llama_cpp.__version__}, one stream"
    for _ in range(args.repeats):
        for name, generator in paths.items():
            for size in SIZES.get(name, (1, 8)):
                keep((name, size), *timed(generator, requests, size))
        keep((peer_name, 1), *timed_peer(peer, requests))

    rate = {key: tokens / seconds for key, (seconds, tokens) in best.items()}
    float32 = texts[("crossknow transformers float32", 1)]

    def equal(a: list[str], b: list[str]) -> str:
        return f"{sum(x == y for x, y in zip(a, b, strict=True))}/{len(a)}"

    print(f"\nembedded Gemma 3 270M, CPU ({threads} threads), {len(requests)} chat prompts x {args.max_tokens} tokens, "
          "greedy; best of", args.repeats)
    print("| path | batch 1 (tokens/s) | batch 8 | batch 32 | batch 8 = batch 1 | batch 1 = float32 |")
    print("|---|---|---|---|---|---|")
    for name in paths:
        one, eight, wide = (name, 1), (name, 8), (name, 32)
        print(f"| {name} | {rate[one]:.1f} | {rate[eight]:.1f} | {f'{rate[wide]:.1f}' if wide in rate else '-'} | "
              f"{equal(texts[eight], texts[one])} | {equal(texts[one], float32)} |")
    print(f"| {peer_name} | {rate[(peer_name, 1)]:.1f} | - | - | - | {equal(texts[(peer_name, 1)], float32)} |")
    single = rate[(peer_name, 1)]
    print(f"\n`default` against the peer's one stream: batch 1 {rate[(LLAMACPP, 1)] / single:.2f}x, batch 8 "
          f"{rate[(LLAMACPP, 8)] / single:.2f}x, batch 32 {rate[(LLAMACPP, 32)] / single:.2f}x")
    print(f"`default` batch 1 output equal to the peer's: {equal(texts[(LLAMACPP, 1)], texts[(peer_name, 1)])}")


if __name__ == "__main__":
    main()
