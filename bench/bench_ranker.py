"""CPU cost of the learned ranker per query on a large index: the same pasted reports searched
with `[search] ranker = "fusion"` and `"learned"`, alternated in one process, and the learned
ranker's own steps timed apart (features, then the trees).

    .venv/bin/python -m bench.bench_ranker --root TREE --db INDEX \
        --jsonl ../shared/eval/swebench-lite-dev.jsonl [--jsonl ...] [--queries 60] [--rounds 2]

Each query runs `search_files` then `search` (what `coderag search` on a report does for files and
units); CPU is `time.thread_time()` of this thread (the searches use no other thread without
vectors). Prints p50 / p95 of each configuration and of the difference per query, and of the ranker's
steps: `prepare` (report signals, graph reach), file features, unit features (reading the best
files' chunks), and scoring (the trees, numpy).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coderag_tui.config import Settings
from coderag_tui.retrieval import ranker
from coderag_tui.retrieval.search import Searcher
from coderag_tui.service import CodeRag

STEPS: dict[str, list[float]] = defaultdict(list)


def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            STEPS[name].append(time.thread_time() - t)
    return wrapper


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else 0.0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--jsonl", action="append", required=True)
    p.add_argument("--queries", type=int, default=60)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--model", default="", help="a model file (default: the shipped one)")
    args = p.parse_args()
    queries = [json.loads(line)["query"] for path in args.jsonl for line in Path(path).read_text().splitlines()
               if line.strip()]
    queries = [q for q in queries if ranker.applies(q)]
    step = max(1, len(queries) // args.queries)
    queries = queries[::step][: args.queries]
    service = CodeRag(Path(args.root), Settings(), Path(args.db))
    chunks = service.status().chunks
    base = dataclasses.replace(service.settings.search, ranker="fusion")
    fusion = Searcher(service.db, base, None)
    learned = Searcher(service.db, dataclasses.replace(base, ranker="learned", ranker_model=args.model), None)
    if learned.learned("hybrid", queries[0]) is None:
        raise SystemExit("no model: train one first (bench/train_ranker.py) or pass --model")
    for name in ("prepare", "file_matrix", "unit_matrix"):
        setattr(ranker, name, timed(name, getattr(ranker, name)))
    ranker.Trees.score = timed("trees", ranker.Trees.score)  # type: ignore[method-assign]
    for q in queries[:3]:  # warm caches (term counts, the model file)
        for s in (fusion, learned):
            s.search_files(q)
            s.search(q)
    STEPS.clear()
    cpu: dict[str, list[float]] = {"fusion": [], "learned": []}
    per_query: dict[str, list[float]] = defaultdict(list)
    for _ in range(args.rounds):
        for q in queries:
            for name, s in (("fusion", fusion), ("learned", learned)):
                before = {k: len(v) for k, v in STEPS.items()}
                t = time.thread_time()
                s.search_files(q)
                s.search(q)
                cpu[name].append(time.thread_time() - t)
                if name == "learned":
                    for k, v in STEPS.items():
                        per_query[k].append(sum(v[before.get(k, 0):]))
    diff = [b - a for a, b in zip(cpu["fusion"], cpu["learned"], strict=True)]
    print(f"index: {chunks} chunks; {len(queries)} reports x {args.rounds} rounds; CPU per query (search_files + search)")
    for name, values in (*cpu.items(), ("learned - fusion", diff)):
        print(f"  {name:<18} p50 {pct(values, 0.5):7.1f} ms   p95 {pct(values, 0.95):7.1f} ms   "
              f"mean {statistics.fmean(values) * 1000:7.1f} ms")
    print("learned ranker steps, CPU per query (each step summed over the query's calls):")
    total = [sum(v[i] for v in per_query.values()) for i in range(len(cpu["learned"]))]
    for name, values in (*per_query.items(), ("all steps", total)):
        print(f"  {name:<18} p50 {pct(values, 0.5):7.1f} ms   p95 {pct(values, 0.95):7.1f} ms")
    service.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
