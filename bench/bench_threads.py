"""Benchmark: llama.cpp thread counts for the bundled model on this machine, idle and busy.

For each (generation threads, prompt threads) pair, the same ~1,500-token prompt of real code is
answered by a bare llama.cpp call (64 tokens, temperature 0), without and with one extra
process burning a core (as a watcher, an embedder or another program does). Configurations are
interleaved in each round so that a change of the machine's load hits them all alike.

    python -m bench.bench_threads [--rounds 2] [--context-tokens 1500] [--max-tokens 64]

It prints time to first token, generation tokens/s and total time per configuration (median of
the rounds), and which configuration `[llm] threads = 0` (the default) picks here.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from typing import Any

from bench.harness import load_average, machine_line
from bench.harness.code_context import QUESTION, build_context
from coderag_tui.answering.prompts import SYSTEM_RULES
from coderag_tui.answering.providers.base import ProviderOptions
from coderag_tui.answering.providers.local import (
    LlamaProvider,
    cpu_count,
    default_threads,
)
from coderag_tui.config import ProviderSettings


def one_run(model: str, threads: int, batch_threads: int, messages: list[dict[str, str]],
            max_tokens: int) -> dict[str, float]:
    from llama_cpp import Llama

    llm = Llama(model_path=model, n_ctx=4096, n_threads=threads, n_threads_batch=batch_threads, verbose=False)
    start = time.perf_counter()
    first = 0.0
    tokens = 0
    chunks: Any = llm.create_chat_completion(messages=messages, stream=True,  # type: ignore[arg-type]
                                             max_tokens=max_tokens, temperature=0.0, repeat_penalty=1.15)
    for chunk in chunks:
        if chunk["choices"][0].get("delta", {}).get("content"):
            tokens += 1
            if not first:
                first = time.perf_counter()
    end = time.perf_counter()
    llm.close()
    gen = end - first if first else 0.0
    return {"ttft_s": (first or end) - start, "total_s": end - start,
            "tok_s": (tokens - 1) / gen if gen > 0 and tokens > 1 else 0.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--context-tokens", type=int, default=1500)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    print(machine_line())
    provider = LlamaProvider(ProviderSettings(threads=1), ProviderOptions(models_dir=None))
    context = build_context(provider, args.context_tokens)
    messages = [{"role": "system", "content": SYSTEM_RULES},
                {"role": "user", "content": context.render() + "\n\nQuestion: " + QUESTION}]
    cores = cpu_count()
    configs = sorted({(1, 1), (1, cores), (cores, cores)})
    print(f"{provider.path.name}: {cores} cores, prompt ~{context.tokens} tokens, {args.max_tokens} "
          f"answer tokens, {args.rounds} rounds; load avg at start {load_average()}", flush=True)
    results: dict[tuple[str, int, int], list[dict[str, float]]] = {}
    for busy in (False, True):
        burner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
        try:
            for _ in range(args.rounds):
                for threads, batch in configs:
                    key = ("busy" if busy else "idle", threads, batch)
                    r = one_run(str(provider.path), threads, batch, messages, args.max_tokens)
                    results.setdefault(key, []).append(r)
                    print(f"  {key[0]} {threads}/{batch} threads: first token {r['ttft_s']:.2f} s, "
                          f"{r['tok_s']:.1f} tokens/s, total {r['total_s']:.2f} s", flush=True)
        finally:
            if burner is not None:
                burner.kill()
                burner.wait()
    print(f"{'machine':<6} {'gen thr':>7} {'prompt thr':>10} {'first token s':>14} {'tokens/s':>9} {'total s':>8}")
    for (state, threads, batch), runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in ("ttft_s", "tok_s", "total_s")}
        print(f"{state:<6} {threads:>7} {batch:>10} {med['ttft_s']:>14.2f} {med['tok_s']:>9.1f} {med['total_s']:>8.2f}")
    gen, batch = default_threads(cores)
    print(f"default ([llm] threads = 0) here: {gen} generation thread(s), {batch} prompt thread(s); "
          f"load avg at end {load_average()}")


if __name__ == "__main__":
    main()
