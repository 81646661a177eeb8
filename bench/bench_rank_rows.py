"""CPU of the file features' Python alone (`rank_features.file_candidates` with its store reads
memoised), this checkout's code against another checkout's, and whether both give the same rows.

    .venv/bin/python -m bench.bench_rank_rows --root TREE --db INDEX --jsonl SET.jsonl [--jsonl ...] \
        --other OTHER_CHECKOUT [--queries 40] [--rounds 3]

The candidates' arguments are taken from `search_files` on the reports (this code); each code then
builds the rows for all of them, alternated, `rounds` times; the path caches are warm (a first
pass per code). Prints ms per report for each, and `identical` when every row matrix is equal.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import sys
import time
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import numpy as np

from coderag_tui.config import Settings
from coderag_tui.retrieval import rank_features, ranker
from coderag_tui.retrieval.search import Searcher
from coderag_tui.service import CodeRag
from coderag_tui.store import rank_reads, rank_values


def memoised(fn: Callable[..., Any], key: Callable[[tuple[Any, ...]], Hashable]) -> Callable[..., Any]:
    seen: dict[Hashable, Any] = {}

    def wrapper(*args: Any) -> Any:
        k = key(args)
        if k not in seen:
            seen[k] = fn(*args)
        return seen[k]
    return wrapper


def patch(module: Any, name: str, value: Any) -> None:
    setattr(module, name, value)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--jsonl", action="append", required=True)
    p.add_argument("--other", required=True, help="another checkout of the project")
    p.add_argument("--queries", type=int, default=40)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    spec = importlib.util.spec_from_file_location(
        "other_rank_features", Path(args.other) / "coderag_tui" / "retrieval" / "rank_features.py")
    assert spec is not None and spec.loader is not None
    other = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = other
    spec.loader.exec_module(other)
    queries = [json.loads(line)["query"] for path in args.jsonl for line in Path(path).read_text().splitlines()
               if line.strip()]
    queries = [q for q in queries if ranker.applies(q)]
    queries = queries[:: max(1, len(queries) // args.queries)][: args.queries]
    service = CodeRag(Path(args.root), Settings(), Path(args.db))
    searcher = Searcher(service.db, dataclasses.replace(service.settings.search, ranker="learned"), None)
    calls: list[tuple[Any, ...]] = []
    mine = rank_features.file_candidates

    def capture(*a: Any) -> Any:
        calls.append(a)
        return mine(*a)
    patch(rank_features, "file_candidates", capture)
    for q in queries:
        searcher.search_files(q)
    patch(rank_features, "file_candidates", mine)
    patch(rank_reads, "file_sizes", memoised(rank_reads.file_sizes, lambda a: tuple(a[1])))
    patch(rank_values, "inbound_files", memoised(rank_values.inbound_files, lambda a: tuple(a[1])))
    cover = memoised(rank_features.coverage, lambda a: (a[1], tuple(a[2])))
    for module in (rank_features, other):
        patch(module, "coverage", cover)
    codes: tuple[tuple[str, Callable[..., Any]], ...] = (("other", other.file_candidates), ("this", mine))
    same = True
    for a in calls:  # the memos and the path caches filled; the rows compared
        (c1, r1), (c2, r2) = (fn(*a) for _, fn in codes)
        same &= c1 == c2 and r1.dtype == r2.dtype and np.array_equal(r1, r2)
    cpu: dict[str, list[float]] = {name: [] for name, _ in codes}
    for _ in range(args.rounds):
        for name, fn in codes:
            t = time.thread_time()
            for a in calls:
                fn(*a)
            cpu[name].append((time.thread_time() - t) / len(calls) * 1000)
    print(f"{len(calls)} reports; rows {'identical' if same else 'DIFFER'}; ms per report, each round:")
    for name, values in cpu.items():
        print(f"  {name:<6} " + " ".join(f"{v:6.2f}" for v in values))
    service.close()
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
