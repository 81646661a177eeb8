"""Benchmark: prompt processing of the bundled model, in CPU seconds, by prompt length and by
llama.cpp's batch settings (one thread, as `[llm] threads = 0` picks on 2 cores).

    python -m bench.bench_prompt [--tokens 2900 1400] [--rounds 1]

CPU seconds of this process (llama.cpp's thread included) hold on a loaded machine where wall
time does not. The prompt is this repository's answering code, cut to each length; every
variant is read at the shortest length, the default at every length, interleaved in each round.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from bench.harness import ROOT, machine_line
from coderag_tui.answering.providers.local import bundled_model_path

DEFAULT = "n_batch 512 (default)"
VARIANTS: dict[str, dict[str, Any]] = {
    DEFAULT: {},
    "n_batch/n_ubatch 128": {"n_batch": 128, "n_ubatch": 128},
    "n_batch/n_ubatch 2048": {"n_batch": 2048, "n_ubatch": 2048},
    "flash_attn": {"flash_attn": True},
}


def main() -> None:
    from llama_cpp import Llama

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[2900, 1400])
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    print(machine_line())
    model = str(bundled_model_path())
    source = "".join(p.read_text() for p in sorted((ROOT / "coderag_tui" / "answering").glob("*.py")))
    llms = {name: Llama(model_path=model, n_ctx=4096, n_threads=1, n_threads_batch=1, verbose=False, **kw)
            for name, kw in VARIANTS.items()}
    tokens = llms[DEFAULT].tokenize(source.encode(), add_bos=False)
    shortest = min(args.tokens)
    runs: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for _ in range(args.rounds):
        for n in args.tokens:
            text = llms[DEFAULT].detokenize(tokens[:n]).decode(errors="ignore")
            for name, llm in llms.items():
                if n != shortest and name != DEFAULT:
                    continue
                llm.reset()
                cpu, wall = time.process_time(), time.perf_counter()
                llm.create_completion(text, max_tokens=1, temperature=0.0)
                runs.setdefault((name, n), []).append((time.process_time() - cpu, time.perf_counter() - wall))
    print("variant, prompt tokens: CPU s to the first token (tokens per CPU s), wall s; median of rounds")
    for (name, n), values in runs.items():
        cpu = statistics.median(v[0] for v in values)
        wall = statistics.median(v[1] for v in values)
        print(f"{name:24s} {n:5d}: {cpu:6.2f} CPU s ({n / cpu:5.0f} tok/CPU s), wall {wall:6.1f} s")
    base = statistics.median(v[0] for v in runs[(DEFAULT, shortest)])
    for n in args.tokens:
        if n != shortest:
            longer = statistics.median(v[0] for v in runs[(DEFAULT, n)])
            print(f"{n} tokens / {shortest} tokens: x{longer / base:.2f} CPU")


if __name__ == "__main__":
    main()
