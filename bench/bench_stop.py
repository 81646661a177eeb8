"""Benchmark: how fast a stop (Esc) frees the cores, and what the stop check costs.

With the bundled model, on a prompt of ~1,400 tokens of code:
- reading the prompt with no stop check, and with the abort callback installed but never
  firing (its cost: one trip into Python per node of the prompt's graph);
- a stop set from another thread while the model reads the prompt, and while it generates:
  the seconds until the stream returns, and the process's CPU seconds in the next second.

    python -m bench.bench_stop [--repeats 3] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from functools import cache

from bench.harness import ROOT, machine_line
from coderag_tui.answering.providers.base import ProviderOptions
from coderag_tui.answering.providers.local import LlamaProvider
from coderag_tui.config import ProviderSettings
from coderag_tui.models import ChatMessage


@cache
def code() -> str:
    """The prompt's code: this repository's settings module."""
    return (ROOT / "coderag_tui" / "config.py").read_text()


def cpu() -> float:
    t = os.times()
    return t.user + t.system


def prompt(run: int, chars: int = 4800) -> list[ChatMessage]:
    # a different first line each run: llama-cpp-python reuses a cached prompt prefix
    return [ChatMessage("user", f"run {run}: explain this code.\n{code()[:chars]}")]


def read_prompt(provider: LlamaProvider, run: int, check: bool) -> float:
    """Seconds to the first token (the prompt's reading), with or without a stop check."""
    start = time.perf_counter()
    stream = provider.stream(prompt(run), max_tokens=1, temperature=0.0,
                             should_stop=(lambda: False) if check else None)
    for _ in stream:
        break
    stream.close()
    return time.perf_counter() - start


def stop_after(provider: LlamaProvider, run: int, wait_s: float, tokens: int) -> tuple[float, float, int]:
    """Stop from another thread `wait_s` after the start (reading) or after `tokens` tokens
    (generating): (seconds from the stop to the stream's end, CPU seconds in the next second,
    tokens received)."""
    stop = threading.Event()
    got: list[str] = []
    ended: list[float] = []

    def consume() -> None:
        messages = prompt(run) if tokens == 0 else [ChatMessage("user", f"run {run}: tell a long story.")]
        for text in provider.stream(messages, max_tokens=1500, temperature=0.8, should_stop=stop.is_set):
            got.append(text)
        ended.append(time.perf_counter())

    thread = threading.Thread(target=consume)
    thread.start()
    if tokens:
        while len(got) < tokens and thread.is_alive():
            time.sleep(0.005)
    else:
        time.sleep(wait_s)
    stopped_at = time.perf_counter()
    stop.set()
    thread.join()
    latency = ended[0] - stopped_at
    before = cpu()
    time.sleep(1.0)
    return latency, cpu() - before, len(got)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="[llm] threads (0: all cores)")
    args = parser.parse_args()
    provider = LlamaProvider(ProviderSettings(n_ctx=2048, threads=args.threads),
                             ProviderOptions(models_dir=None))
    provider.load()
    tokens = provider.count_tokens(prompt(0)[0].content)
    print(machine_line())
    print(f"model {provider.path.name}, prompt ~{tokens} tokens")
    plain, checked = [], []
    for i in range(args.repeats):  # interleaved, so that a busy moment hits both alike
        plain.append(read_prompt(provider, 2 * i, check=False))
        checked.append(read_prompt(provider, 2 * i + 1, check=True))
    p, c = statistics.median(plain), statistics.median(checked)
    print(f"reading the prompt: {p:.2f} s without a stop check, {c:.2f} s with it "
          f"(ratio {c / p:.3f}; runs {[round(x, 2) for x in plain]} / {[round(x, 2) for x in checked]})")
    for i in range(args.repeats):
        latency, spent, got = stop_after(provider, 100 + i, wait_s=0.5, tokens=0)
        print(f"stop while reading: returned {latency * 1000:.0f} ms after the stop, "
              f"{spent:.3f} CPU s in the next second, {got} tokens")
    for i in range(args.repeats):
        latency, spent, got = stop_after(provider, 200 + i, wait_s=0.0, tokens=5)
        print(f"stop while generating: returned {latency * 1000:.0f} ms after the stop, "
              f"{spent:.3f} CPU s in the next second, {got} tokens")


if __name__ == "__main__":
    main()
