"""Benchmark: the default local model answering over ~2,000 tokens of real code.

Measures model load, time to first token (prompt evaluation included) and generation speed
on this machine, with context built from this repository's own source files.

    python -m bench.bench_answer [--context-tokens 2000] [--max-tokens 128] [--repeats 3]

`run()` returns the figures as a dict so the service layer can add retrieval vs generation
shares later.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from bench.harness import ROOT, load_average, machine_line
from bench.harness.code_context import QUESTION, build_context
from coderag_tui.answering.answerer import Answerer
from coderag_tui.answering.providers.base import ProviderOptions
from coderag_tui.answering.providers.local import LlamaProvider, cpu_count
from coderag_tui.config import ProviderSettings


def run(context_tokens: int = 2000, max_tokens: int = 128, repeats: int = 1,
        settings: ProviderSettings | None = None) -> dict[str, float | str]:
    """Time to first token and tokens/s of the default local model over real code context."""
    settings = settings or ProviderSettings()
    provider = LlamaProvider(settings, ProviderOptions(models_dir=ROOT / "models"))
    t0 = time.perf_counter()
    llm = provider.load()
    load_s = time.perf_counter() - t0
    context = build_context(provider, context_tokens)
    answerer = Answerer(provider, None, max_tokens=max_tokens, temperature=0.0)
    runs: list[dict[str, float]] = []
    answer = ""
    for _ in range(max(1, repeats)):
        llm.reset()  # no prompt-cache reuse between runs: every run evaluates the whole prompt
        parts: list[str] = []
        for event in answerer.ask(QUESTION, context, ""):
            if event.kind == "token":
                parts.append(event.text)
            elif event.kind == "error":
                raise SystemExit(f"error: {event.text}")
            elif event.kind == "done":
                runs.append(event.stats)
        answer = "".join(parts)
    med = {k: statistics.median(r[k] for r in runs) for k in ("prompt_tokens", "ttft_s", "gen_s", "tokens", "tokens_per_s")}
    return {
        "model": provider.path.name,
        "n_ctx": provider.context_window(),
        "threads": settings.threads or cpu_count(),
        "cores": cpu_count(),
        "machine": machine_line(),
        "load_avg": load_average(),
        "repeats": len(runs),
        "context_tokens": sum(p.tokens for p in context.pieces),
        "context_pieces": len(context.pieces),
        "prompt_tokens": med["prompt_tokens"],
        "load_s": round(load_s, 3),
        "ttft_s": round(med["ttft_s"], 3),
        "prompt_tokens_per_s": round(med["prompt_tokens"] / med["ttft_s"], 1) if med["ttft_s"] else 0.0,
        "gen_s": round(med["gen_s"], 3),
        "tokens": med["tokens"],
        "tokens_per_s": round(med["tokens_per_s"], 1),
        "answer_preview": " ".join(answer.split())[:160],
    }


def run_service(repo: Path, question: str = QUESTION, max_tokens: int = 128) -> dict[str, float]:
    """One real `CodeRag.ask` on an indexed repository: the share of retrieval vs generation."""
    from coderag_tui.service import CodeRag

    service = CodeRag.open(repo)
    if service.status().files == 0:
        service.index()
    from dataclasses import replace

    service.settings = replace(service.settings, llm=replace(service.settings.llm, max_tokens=max_tokens))
    list(service.ask("warm up: load the model"))  # model load is not part of a question
    t0 = time.perf_counter()
    stats: dict[str, float] = {}
    for event in service.ask(question):
        if event.kind == "error":
            raise SystemExit(f"error: {event.text}")
        if event.kind == "done":
            stats = dict(event.stats)
    total = time.perf_counter() - t0
    retrieval = stats.get("retrieval_s", 0.0)
    generation = stats.get("ttft_s", 0.0) + stats.get("gen_s", 0.0)
    return {"total_s": round(total, 3), "retrieval_s": round(retrieval, 3),
            "generation_s": round(generation, 3),
            "retrieval_share": round(retrieval / total, 3) if total else 0.0,
            "generation_share": round(generation / total, 3) if total else 0.0,
            "prompt_tokens": stats.get("prompt_tokens", 0.0), "tokens": stats.get("tokens", 0.0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--context-tokens", type=int, default=2000)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--repo", type=Path, help="also time one real `ask` on this indexed repository "
                        "(retrieval vs generation share)")
    args = parser.parse_args()
    if args.repo:
        share = run_service(args.repo, max_tokens=args.max_tokens)
        print(f"ask on {args.repo}: {share['total_s']} s = retrieval {share['retrieval_s']} s "
              f"({share['retrieval_share']:.0%}) + generation {share['generation_s']} s "
              f"({share['generation_share']:.0%}); prompt {share['prompt_tokens']:.0f} tokens")
    result = run(args.context_tokens, args.max_tokens, args.repeats, ProviderSettings(threads=args.threads))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(result["machine"])
    print(f"model          {result['model']} (n_ctx {result['n_ctx']}, {result['threads']} threads, "
          f"{result['cores']} cores, load avg {result['load_avg']})")
    print(f"context        {result['context_tokens']} tokens in {result['context_pieces']} pieces; "
          f"prompt {result['prompt_tokens']:.0f} tokens")
    print(f"load           {result['load_s']:.3f} s")
    print(f"first token    {result['ttft_s']:.3f} s  ({result['prompt_tokens_per_s']} prompt tokens/s)")
    print(f"generation     {result['tokens']:.0f} tokens in {result['gen_s']:.3f} s = {result['tokens_per_s']} tokens/s")
    print(f"answer         {result['answer_preview']}")


if __name__ == "__main__":
    main()
